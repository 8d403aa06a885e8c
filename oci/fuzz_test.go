package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/memory"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// FuzzParseProviderIndex: no index a registry sends makes the parser
// panic; what it accepts has at most MaxIndexEntries entries and only
// platforms with valid names (they become file names and URLs).
func FuzzParseProviderIndex(f *testing.F) {
	seed := func(platforms ...ocispec.Platform) []byte {
		idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ArtifactTypeProvider}
		for _, p := range platforms {
			idx.Manifests = append(idx.Manifests, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest,
				ArtifactType: ArtifactTypeProviderTarget, Digest: digest.FromString(p.OS + p.Architecture), Size: 10, Platform: &p})
		}
		b, _ := json.Marshal(idx)
		return b
	}
	f.Add(seed(ocispec.Platform{OS: "linux", Architecture: "amd64"}, ocispec.Platform{OS: "darwin", Architecture: "arm64"}))
	f.Add(seed(ocispec.Platform{OS: "linux", Architecture: "../../x"}, ocispec.Platform{OS: "Linux", Architecture: "amd64"}))
	f.Add(seed(ocispec.Platform{OS: "linux", Architecture: "amd64"}, ocispec.Platform{OS: "linux", Architecture: "amd64"}))
	f.Add([]byte(`{"mediaType":"application/vnd.oci.image.index.v1+json","artifactType":"application/vnd.opentofu.provider","manifests":[{"artifactType":"application/vnd.oci-tofu.provenance","mediaType":"application/vnd.oci.image.manifest.v1+json"}],"annotations":{"vnd.oci-tofu.provider.protocols":"5.0,,6.0"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromBytes(b), Size: int64(len(b))}
		pv, err := ParseProviderIndex(desc, b)
		if err != nil {
			return
		}
		if len(pv.Platforms) > MaxIndexEntries {
			t.Fatalf("%d platforms", len(pv.Platforms))
		}
		for p := range pv.Platforms {
			if q, err := names.ParsePlatform(p.String()); err != nil || q != p {
				t.Fatalf("platform %+v", p)
			}
		}
		pv.SortedPlatforms()
	})
}

// FuzzParseModule: no module manifest makes the parser panic; what it
// accepts names one zip layer with a valid sha256 digest.
func FuzzParseModule(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.opentofu.modulepkg","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[{"mediaType":"archive/zip","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":-1}]}`))
	f.Add([]byte(`{"layers":[{"mediaType":"archive/zip","digest":"md5:x"},{"mediaType":"archive/zip"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(b), Size: int64(len(b))}
		z, err := ParseModule(desc, b)
		if err != nil {
			return
		}
		if z.MediaType != MediaTypeZip || z.Digest.Validate() != nil || z.Digest.Algorithm() != digest.SHA256 {
			t.Fatalf("zip layer %+v", z)
		}
	})
}

// FuzzParseReference: references from command lines and configurations
// never make the parser panic (repository templates:
// repotemplate.FuzzParseProviderTemplate).
func FuzzParseReference(f *testing.F) {
	for _, s := range []string{
		"ghcr.io/acme/providers/${namespace}/${type}", "oci-layout:/srv/oci/${namespace}/${type}",
		"localhost:5000/a/b:1.0.0", "oci-layout:/x@sha256:abc", "reg/${hostname}/${namespace}/${type}:tag",
		"https://x/y", "${namespace}${type}", "",
	} {
		f.Add(s, "hashicorp", "aws")
	}
	f.Fuzz(func(t *testing.T, s, ns, typ string) {
		if ref, err := ParseReference(s); err == nil {
			_ = ref.String()
			_ = ref.Name()
		}
	})
}

// FuzzRetryAfterHeader: a registry's Retry-After never panics the client
// nor asks it to wait more than an hour or less than nothing.
func FuzzRetryAfterHeader(f *testing.F) {
	for _, s := range []string{"1", "0", "-5", "99999999999999999999", "Wed, 21 Oct 2015 07:28:00 GMT", "soon"} {
		f.Add(s)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if d := retryAfterHeader(s, now); d < 0 || d > time.Hour {
			t.Fatalf("%q: %s", s, d)
		}
	})
}

// memRepo is an in-memory repository for fuzzing readers that fetch.
type memRepo struct{ *memory.Store }

func (memRepo) Tags(context.Context, string, func([]string) error) error { return nil }

// FuzzReadProvenanceAndTofuRelease: no provenance manifest or OpenTofu
// release manifest, nor the config it names, makes the readers panic. The
// manifest's config descriptor is pointed at the fuzzed config, so the
// config's parser is reached.
func FuzzReadProvenanceAndTofuRelease(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"`+ArtifactTypeProvenance+`","config":{"mediaType":"`+MediaTypeProvenanceConfig+`"},"layers":[{"mediaType":"text/plain","digest":"sha256:x","size":1}]}`),
		[]byte(`{"type":"hello","version":"1.0.0","platforms":{"linux_amd64":{"filename":"x.zip","h1":"h1:x"}}}`))
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"`+ArtifactTypeTofuRelease+`","config":{"mediaType":"`+MediaTypeTofuReleaseConfig+`"},"layers":[{"mediaType":"application/octet-stream","digest":"sha256:x","size":1,"annotations":{"org.opencontainers.image.title":".."}}]}`),
		[]byte(`{"version":"1.9.0","files":[{"name":"tofu_1.9.0_linux_amd64.zip","sha256":"00","size":-1}]}`))
	f.Fuzz(func(t *testing.T, manifest, config []byte) {
		ctx := context.Background()
		repo := memRepo{memory.New()}
		cfg := ocispec.Descriptor{MediaType: "application/json", Digest: digest.FromBytes(config), Size: int64(len(config))}
		if err := repo.Push(ctx, cfg, bytes.NewReader(config)); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if json.Unmarshal(manifest, &m) == nil {
			if c, ok := m["config"].(map[string]any); ok {
				c["digest"], c["size"] = cfg.Digest.String(), cfg.Size
				manifest, _ = json.Marshal(m)
			}
		}
		desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(manifest), Size: int64(len(manifest))}
		if err := repo.Push(ctx, desc, bytes.NewReader(manifest)); err != nil {
			return // the memory store refuses what it cannot index; a registry would too
		}
		ReadProvenance(ctx, repo, desc)
		if _, files, err := ReadTofuRelease(ctx, repo, desc); err == nil {
			for name := range files {
				if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\") {
					t.Fatalf("file name %q", name)
				}
			}
		}
	})
}
