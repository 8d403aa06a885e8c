package oci

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"oras.land/oras-go/v2/registry"
)

// CheckPush makes sure the proxy may push to ref's repository without
// writing anything: it asks the registry to start a blob upload there,
// with pull and push scope (as pushes ask), and cancels the upload at
// once. A registry that refuses the credentials (none, or read-only ones)
// refuses here. For an OCI layout it checks that the directory can be
// written.
func (c *Client) CheckPush(ctx context.Context, ref Reference) error {
	if ref.Layout {
		return checkLayoutWritable(ref.Repository)
	}
	scheme := "https"
	if c.opts.PlainHTTP {
		scheme = "http"
	}
	u := &url.URL{Scheme: scheme, Host: ref.Registry, Path: "/v2/" + ref.Repository + "/blobs/uploads/"}
	ctx = withPushScope(ctx, registry.Reference{Registry: ref.Registry, Repository: ref.Repository})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := c.auth.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("starting an upload: %s", resp.Status)
	}
	if loc, err := u.Parse(resp.Header.Get("Location")); err == nil && resp.Header.Get("Location") != "" {
		if del, err := http.NewRequestWithContext(ctx, http.MethodDelete, loc.String(), nil); err == nil {
			if resp, err := c.auth.Do(del); err == nil {
				resp.Body.Close()
			}
		}
	}
	return nil
}

// checkLayoutWritable creates (and removes) a file in a layout directory,
// creating the directory when missing, as pushes do.
func checkLayoutWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".oci-tofu-write-check-")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(filepath.Join(dir, filepath.Base(f.Name())))
}
