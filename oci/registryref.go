package oci

import (
	"context"
	"errors"
	"fmt"
	"os"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// ParseRegistryReference reads s as a registry reference only, exactly as
// oras-go (and so OpenTofu's oci_mirror) reads it: no "oci-layout:" form,
// so "oci-layout:/srv/x" is a registry named "oci-layout:".
func ParseRegistryReference(s string) (Reference, error) {
	r, err := registry.ParseReference(s)
	if err != nil {
		return Reference{}, fmt.Errorf("invalid reference %q: %w", s, err)
	}
	return Reference{Registry: r.Registry, Repository: r.Repository, Reference: r.Reference}, nil
}

// Ping asks a registry's API root (/v2/) with the client's credentials,
// TLS trust and scheme: nil means the registry answers and accepts them.
// An OCI layout is pinged by looking for its directory.
func (c *Client) Ping(ctx context.Context, ref Reference) error {
	if ref.Layout {
		return layoutExists(ref.Repository)
	}
	reg, err := remote.NewRegistry(ref.Registry)
	if err != nil {
		return fmt.Errorf("invalid registry %s: %w", ref.Registry, err)
	}
	reg.Client = c.auth
	reg.PlainHTTP = c.opts.PlainHTTP
	return reg.Ping(ctx)
}

// layoutExists: a missing OCI layout directory is errdef.ErrNotFound.
func layoutExists(dir string) error {
	_, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("OCI layout %s: %w", dir, errdef.ErrNotFound)
	}
	return err
}

// CredentialsFrom says where the client's credentials for a registry
// host come from: "--username USER", "docker config (USER)", or "" when
// it has none (anonymous).
func (c *Client) CredentialsFrom(ctx context.Context, host string) string {
	if c.opts.Username != "" {
		return "--username " + c.opts.Username
	}
	cred, err := c.auth.Credential(ctx, host)
	if err != nil || cred == (auth.Credential{}) {
		return ""
	}
	if cred.Username != "" {
		return "docker config (" + cred.Username + ")"
	}
	return "docker config (token)"
}
