package origin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ModulesBase discovers modules.v1 for a host (cached), or returns the
// base SetModulesBase fixed.
func (c *Client) ModulesBase(ctx context.Context, host string) (*url.URL, error) {
	return c.serviceBase(ctx, host, "modules.v1")
}

// SetModulesBase fixes where host's modules.v1 service is (a `host`
// block of the CLI configuration), instead of asking service discovery.
func (c *Client) SetModulesBase(host string, base *url.URL) error {
	return c.setBase(host, "modules.v1", base)
}

// ModuleVersions lists the versions host offers of module mod
// (docs/reference.md §6).
func (c *Client) ModuleVersions(ctx context.Context, host string, mod names.Module) ([]string, error) {
	base, err := c.ModulesBase(ctx, host)
	if err != nil {
		return nil, err
	}
	u := base.JoinPath(mod.Namespace, mod.Name, mod.System, "versions")
	var doc wire.ModuleVersions
	if _, err := c.getJSON(ctx, u, host, &doc); err != nil {
		return nil, fmt.Errorf("module %s/%s: %w", host, mod, err)
	}
	var out []string
	for _, m := range doc.Modules {
		for _, v := range m.Versions {
			out = append(out, v.Version)
		}
	}
	return out, nil
}

// ModuleLocation asks host where version v of mod is: the download
// answer's JSON location or X-Terraform-Get header, resolved against the
// download URL when it is relative (docs/reference.md §6). Redirects of
// the download request are followed as the client's transport allows.
func (c *Client) ModuleLocation(ctx context.Context, host string, mod names.Module, v string) (string, error) {
	base, err := c.ModulesBase(ctx, host)
	if err != nil {
		return "", err
	}
	u := base.JoinPath(mod.Namespace, mod.Name, mod.System, v, "download")
	resp, err := c.do(ctx, u, host)
	if err != nil {
		return "", fmt.Errorf("module %s/%s %s: %w", host, mod, v, err)
	}
	defer resp.Body.Close()
	loc, err := downloadLocation(resp)
	if err != nil {
		return "", fmt.Errorf("module %s/%s %s: %s: %w", host, mod, v, u.Redacted(), err)
	}
	return resolveLocation(resp.Request.URL, loc)
}

// downloadLocation reads a download answer: 204 (or 200 without a JSON
// location) with X-Terraform-Get, or 200 with {"location": …}.
func downloadLocation(resp *http.Response) (string, error) {
	switch resp.StatusCode {
	case http.StatusNoContent, http.StatusOK:
	case http.StatusNotFound:
		return "", ErrNotFound
	default:
		return "", fmt.Errorf("answered %s", resp.Status)
	}
	loc := resp.Header.Get("X-Terraform-Get")
	if resp.StatusCode == http.StatusOK {
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxJSON+1))
		if err != nil {
			return "", err
		}
		var doc struct {
			Location string `json:"location"`
		}
		if len(b) > maxJSON {
			return "", fmt.Errorf("answer larger than %d bytes", maxJSON)
		}
		if len(strings.TrimSpace(string(b))) > 0 {
			if err := json.Unmarshal(b, &doc); err != nil {
				return "", fmt.Errorf("not a valid JSON answer: %w", err)
			}
		}
		if doc.Location != "" {
			loc = doc.Location
		}
	}
	if loc == "" {
		return "", errors.New("the download answer names no location (X-Terraform-Get or location)")
	}
	return loc, nil
}

// resolveLocation makes a location beginning with /, ./ or ../ absolute
// against the download URL, as tofu does; others are source addresses.
func resolveLocation(download *url.URL, loc string) (string, error) {
	if !strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "./") && !strings.HasPrefix(loc, "../") {
		return loc, nil
	}
	u, err := download.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("location %q: %w", loc, err)
	}
	return u.String(), nil
}
