package main

import (
	"context"
	"fmt"
	"os"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// pushLayout copies the tagged image of the layout at dir, with all its
// platforms, to ref (REGISTRY/REPOSITORY[:TAG]; the layout's tag when ref
// has none), with the credentials of the docker configuration (config.json
// and credential helpers, as `docker login` left them). Trust comes from
// the system roots and SSL_CERT_FILE.
func pushLayout(ctx context.Context, dir, tag, ref string, plainHTTP bool) (ocispec.Descriptor, error) {
	src, err := oci.NewFromFS(ctx, os.DirFS(dir))
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("reading layout %s: %w", dir, err)
	}
	target, err := registry.ParseReference(ref)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("--push %q: %w", ref, err)
	}
	if target.Reference == "" {
		target.Reference = tag
	}
	repo, err := remote.NewRepository(target.Registry + "/" + target.Repository)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("docker credentials: %w", err)
	}
	repo.PlainHTTP = plainHTTP
	repo.Client = &auth.Client{
		Client:     retry.DefaultClient,
		Cache:      auth.NewCache(),
		Credential: credentials.Credential(store),
		Header:     map[string][]string{"User-Agent": {"oci-tofu-image-tool"}},
	}
	desc, err := oras.Copy(ctx, src, tag, repo, target.Reference, oras.DefaultCopyOptions)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("pushing to %s: %w", target, err)
	}
	return desc, nil
}
