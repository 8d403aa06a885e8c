// Package lint checks OCI artifacts exactly as OpenTofu reads them: the
// linter behind `oci-tofu verify`. Errors are what would make OpenTofu fail;
// warnings are what it ignores or what oci-tofu cannot vouch for.
package lint

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Severity of a finding: errors are what would make OpenTofu fail.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityOK      Severity = "ok"
)

// Finding is one result of checking an artifact.
type Finding struct {
	Reference string   `json:"reference"`
	Severity  Severity `json:"severity"`
	Message   string   `json:"message"`
}

// Options tune Check.
type Options struct {
	// SkipZips leaves the zips undownloaded: only manifests are checked.
	SkipZips bool
}

// Check checks the artifact a reference names the way OpenTofu reads it
// (REFERENCE §1, §2): media types, artifactType on descriptors and bodies,
// platforms and duplicates, a single zip layer, canonical tags, size limits,
// readable zips whose digests match, and the oci-tofu provenance (signature,
// SHA256SUMS, h1) when present. A reference without tag or digest checks
// every tag of the repository. The error return is for failures to check
// at all (registry unreachable); problems with the artifact are findings.
func Check(ctx context.Context, repo oci.ReadOnlyRepository, ref oci.Reference, opts Options) ([]Finding, error) {
	if ref.Reference != "" {
		return verifyOne(ctx, repo, ref, opts)
	}
	tags, err := oci.ListTags(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("listing tags of %s: %w", ref, err)
	}
	if len(tags) == 0 {
		return []Finding{{Reference: ref.String(), Severity: SeverityError, Message: "repository has no tags"}}, nil
	}
	sort.Strings(tags)
	var all []Finding
	for _, t := range tags {
		f, err := verifyOne(ctx, repo, ref.WithReference(t), opts)
		if err != nil {
			return all, err
		}
		all = append(all, f...)
	}
	return all, nil
}

type checker struct {
	ctx      context.Context
	repo     oci.ReadOnlyRepository
	ref      string
	opts     Options
	findings []Finding
}

func (c *checker) add(sev Severity, format string, args ...any) {
	c.findings = append(c.findings, Finding{Reference: c.ref, Severity: sev, Message: fmt.Sprintf(format, args...)})
}

// problem records err as a finding when it is about the artifact, and
// returns it otherwise (the registry failed, not the artifact).
func (c *checker) problem(err error) error {
	if oci.IsContentProblem(err) {
		c.add(SeverityError, "%v", err)
		return nil
	}
	return err
}

func verifyOne(ctx context.Context, repo oci.ReadOnlyRepository, ref oci.Reference, opts Options) ([]Finding, error) {
	c := &checker{ctx: ctx, repo: repo, ref: ref.String(), opts: opts}
	desc, err := repo.Resolve(ctx, ref.Reference)
	if err != nil {
		return c.findings, c.problem(fmt.Errorf("resolving %s: %w", ref.Reference, err))
	}
	if desc.Size > oci.MaxManifestSize {
		c.add(SeverityError, "manifest of %d bytes exceeds OpenTofu's 4 MiB limit", desc.Size)
		return c.findings, nil
	}
	switch desc.MediaType {
	case ocispec.MediaTypeImageIndex:
		err = c.provider(desc, ref.Reference)
	case ocispec.MediaTypeImageManifest:
		err = c.module(desc)
	default:
		c.add(SeverityError, "media type %q is neither an OCI image index (provider) nor an image manifest (module)", desc.MediaType)
	}
	if err != nil {
		return c.findings, err
	}
	if len(c.findings) == 0 {
		c.add(SeverityOK, "%s passes every check", desc.Digest)
	}
	return c.findings, nil
}

func (c *checker) provider(desc ocispec.Descriptor, tag string) error {
	if _, ok := names.VersionFromTag(tag); !ok && !isDigest(tag) {
		c.add(SeverityError, "tag %q is not a canonical version: OpenTofu never resolves it (write 1.2.3, with _ for +)", tag)
	}
	pv, err := oci.ReadProviderIndex(c.ctx, c.repo, desc)
	if err != nil {
		return c.problem(err)
	}
	if len(pv.Platforms) == 0 {
		c.add(SeverityError, "index has no %s manifest: OpenTofu finds no package for any platform", oci.ArtifactTypeProviderTarget)
	}
	zips := map[names.Platform]ocispec.Descriptor{}
	platforms := sortedPlatforms(pv.Platforms)
	for _, p := range platforms {
		z, err := oci.ReadProviderPackage(c.ctx, c.repo, pv.Platforms[p])
		if err != nil {
			if err := c.problem(fmt.Errorf("%s: %w", p, err)); err != nil {
				return err
			}
			continue
		}
		zips[p] = z
	}
	var prov *oci.Provenance
	if pv.Provenance == nil {
		c.add(SeverityWarning, "no oci-tofu provenance: installs work, but the registry protocol needs a signing key and lock files need the zips downloaded")
	} else if prov, err = c.provenance(*pv.Provenance, zips); err != nil {
		return err
	}
	if c.opts.SkipZips {
		return nil
	}
	for _, p := range platforms {
		z, ok := zips[p]
		if !ok {
			continue
		}
		h1, err := pkghash.RemoteZipH1(c.ctx, c.repo, z)
		if err != nil {
			if err := c.problem(fmt.Errorf("%s: %w", p, err)); err != nil {
				return err
			}
			continue
		}
		if prov != nil {
			if want := prov.Platforms[p.String()].H1; want != "" && want != h1 {
				c.add(SeverityError, "%s: stored h1 %s differs from the zip's %s: tofu would report a checksum mismatch", p, want, h1)
			}
		}
	}
	return nil
}

func (c *checker) provenance(desc ocispec.Descriptor, zips map[names.Platform]ocispec.Descriptor) (*oci.Provenance, error) {
	prov, files, err := oci.ReadProvenance(c.ctx, c.repo, desc)
	if err != nil {
		return nil, c.problem(fmt.Errorf("provenance: %w", err))
	}
	if files.SHA256SUMS.Data == nil {
		return prov, nil
	}
	sums, err := sha256sums.Parse(files.SHA256SUMS.Data)
	if err != nil {
		c.add(SeverityError, "provenance SHA256SUMS: %v", err)
		return prov, nil
	}
	for p, z := range zips {
		name := prov.Platforms[p.String()].Filename
		if sums[name] != z.Digest.Encoded() {
			c.add(SeverityError, "%s: zip digest %s is not what SHA256SUMS lists for %q", p, z.Digest, name)
		}
	}
	if files.Signature.Data != nil {
		kr, err := pgp.ReadKeyring(files.Keys.Name, files.Keys.Data)
		if err != nil {
			c.add(SeverityError, "provenance keys: %v", err)
		} else if _, err := pgp.VerifyDetached(files.SHA256SUMS.Data, files.Signature.Data, []*pgp.Keyring{kr}); err != nil {
			c.add(SeverityError, "provenance signature: %v", err)
		}
	}
	return prov, nil
}

func (c *checker) module(desc ocispec.Descriptor) error {
	// A registry's tag resolution carries no artifactType: read the body.
	b, err := oci.FetchManifest(c.ctx, c.repo, desc)
	if err != nil {
		return c.problem(err)
	}
	var head struct {
		ArtifactType string `json:"artifactType"`
	}
	if json.Unmarshal(b, &head) == nil && head.ArtifactType == oci.ArtifactTypeProviderTarget {
		c.add(SeverityError, "tag points to a provider platform manifest; OpenTofu needs providers tagged as an index")
		return nil
	}
	z, err := oci.ReadModule(c.ctx, c.repo, desc)
	if err != nil {
		return c.problem(err)
	}
	if z.Size > modulepkg.MaxSize {
		c.add(SeverityError, "module zip %s is %d bytes, more than the %d bytes oci-tofu pull module accepts", z.Digest, z.Size, int64(modulepkg.MaxSize))
		return nil
	}
	if c.opts.SkipZips {
		return nil
	}
	zr, done, err := pkghash.FetchZip(c.ctx, c.repo, z)
	if err != nil {
		return c.problem(err)
	}
	defer done()
	if _, err := modulepkg.CheckZip(zr, modulepkg.MaxSize); err != nil {
		c.add(SeverityError, "module zip %s: %v", z.Digest, err)
	} else if err := pkghash.ReadEntries(c.ctx, zr); err != nil {
		if c.ctx.Err() != nil {
			return c.ctx.Err()
		}
		c.add(SeverityError, "module zip %s: %v: OpenTofu would fail to unpack it", z.Digest, err)
	}
	return nil
}

func sortedPlatforms(m map[names.Platform]ocispec.Descriptor) []names.Platform {
	ps := make([]names.Platform, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].String() < ps[j].String() })
	return ps
}

func isDigest(ref string) bool { return digest.Digest(ref).Validate() == nil }
