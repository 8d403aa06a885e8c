// Package lint checks OCI artifacts exactly as OpenTofu reads them: the
// linter behind `oci-tofu verify`. Errors are what would make OpenTofu fail;
// warnings are what it ignores or what oci-tofu cannot vouch for.
//
// Tags are read as OpenTofu's oci_mirror reads them (names.ListedVersion,
// names.CanonicalTag): a tag that is not a version ("latest", "v1.2.3") is
// ignored, so it and what it points to only get warnings; a tag like "1.2"
// is listed as version 1.2.0, whose tag "1.2.0" OpenTofu then resolves:
// an error when there is no such tag, a warning otherwise.
package lint

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
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
	// AttestKeys, when given, must each have signed every artifact
	// checked and attested it, as cosign verifies (see attestations).
	AttestKeys []AttestKey
	// Trusts, when given, must each be satisfied by every artifact
	// checked (attest.Checker: a notation trust policy's signatures).
	Trusts []attest.Checker
	// Policy, when set, decides on the version of each tag checked, and
	// PolicyAddress names the address it matches for a kind of artifact
	// (policy.go).
	Policy        *policy.Policy
	PolicyAddress func(kind names.Kind) (string, error)
	// Keyless, when given, must each have attested every artifact
	// checked without a key (keyless.go; attest.Checker: cmd supplies
	// convert/keyless, so that this package does not link sigstore-go).
	Keyless []attest.Checker
}

// Check checks the artifact a reference names the way OpenTofu reads it
// (docs/reference.md §1, §2): media types, artifactType on descriptors and bodies,
// platforms and duplicates, a single zip layer, canonical tags, size limits,
// readable zips whose digests match, and the oci-tofu provenance (signature,
// SHA256SUMS, h1) when present. A reference without tag or digest checks
// every tag of the repository. The error return is for failures to check
// at all (registry unreachable); problems with the artifact are findings.
func Check(ctx context.Context, repo oci.ReadOnlyRepository, ref oci.Reference, opts Options) ([]Finding, error) {
	if ref.Reference == versionindex.Tag {
		return checkVersionIndex(ctx, repo, ref)
	}
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
		if attach.IsAttachmentTag(t) {
			continue // cosign's signatures and attestations (sha256-<hex>.sig, .att): no artifact
		}
		check := verifyOne
		if t == versionindex.Tag {
			check = func(ctx context.Context, repo oci.ReadOnlyRepository, ref oci.Reference, _ Options) ([]Finding, error) {
				return checkVersionIndex(ctx, repo, ref)
			}
		}
		f, err := check(ctx, repo, ref.WithReference(t), opts)
		if err != nil {
			return all, err
		}
		all = append(all, f...)
	}
	return all, nil
}

// maxListedVersions bounds the versions a version-index finding names.
const maxListedVersions = 10

// checkVersionIndex reports whether the repository's version index
// (docs/artifacts.md, "The version index") agrees with its tags: a
// warning when it does not, as listings then read the versions it gets
// wrong from their tags, or list a moved tag's old platforms.
func checkVersionIndex(ctx context.Context, repo oci.ReadOnlyRepository, ref oci.Reference) ([]Finding, error) {
	c, err := versionindex.Verify(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("checking the version index: %w", err)
	}
	at := ref.WithReference(versionindex.Tag).String()
	warn := func(format string, args ...any) []Finding {
		return []Finding{{Reference: at, Severity: SeverityWarning, Message: fmt.Sprintf(format, args...)}}
	}
	switch {
	case !c.Present:
		return nil, nil
	case c.Refused != "":
		return warn("the version index cannot be read (listings read every version from its tag; the next push rewrites it): %s", c.Refused), nil
	case len(c.Stale) > 0 || len(c.Missing) > 0:
		var wrong []string
		if len(c.Stale) > 0 {
			wrong = append(wrong, "names other content than the tags of "+someVersions(c.Stale)+" (listings may show their old platforms)")
		}
		if len(c.Missing) > 0 {
			wrong = append(wrong, "lacks "+someVersions(c.Missing)+" (listings read them from their tags)")
		}
		return warn("the version index %s; the next push of a version rewrites it", strings.Join(wrong, ", and ")), nil
	}
	return []Finding{{Reference: at, Severity: SeverityOK, Message: fmt.Sprintf("the version index agrees with the tags (versions: %d)", c.Entries)}}, nil
}

// someVersions names versions, at most maxListedVersions of them.
func someVersions(vs []string) string {
	if len(vs) <= maxListedVersions {
		return "version " + strings.Join(vs, ", ")
	}
	return fmt.Sprintf("version %s and %d more", strings.Join(vs[:maxListedVersions], ", "), len(vs)-maxListedVersions)
}

type checker struct {
	ctx      context.Context
	repo     oci.ReadOnlyRepository
	ref      string
	repoName string // the repository path, which names the provider type
	fullName string // the repository as oci.Reference.Name names it
	layout   bool   // an OCI layout: its directory names no type
	tag      string // the tag or digest checked
	opts     Options
	findings []Finding
	// unread is set for a tag OpenTofu never reads: what it points to
	// cannot make OpenTofu fail, so errors about it become warnings.
	unread string
	// kind is that of the artifact checked; empty for what is none of
	// names.Kind's (then it is not attested, nor decided by the policy).
	kind names.Kind
}

// predicateType is that of the attestation oci-tofu writes for the kind
// of artifact checked; empty for what it does not attest.
func (c *checker) predicateType() string { return attest.PredicateType(c.kind) }

func (c *checker) add(sev Severity, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if sev == SeverityError && c.unread != "" {
		sev, msg = SeverityWarning, msg+" ("+c.unread+")"
	}
	c.findings = append(c.findings, Finding{Reference: c.ref, Severity: sev, Message: msg})
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
	c := &checker{ctx: ctx, repo: repo, ref: ref.String(), repoName: ref.Repository, fullName: ref.Name(), layout: ref.Layout, tag: ref.Reference, opts: opts}
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
		if err = c.providerTag(ref.Reference); err == nil {
			err = c.provider(desc)
		}
	case ocispec.MediaTypeImageManifest:
		err = c.manifest(desc, ref.Reference)
	default:
		if err = c.providerTag(ref.Reference); err == nil {
			c.add(SeverityError, "media type %q is neither an OCI image index (provider) nor an image manifest (module)", desc.MediaType)
		}
	}
	if err != nil {
		return c.findings, err
	}
	if len(c.findings) == 0 {
		c.add(SeverityOK, "%s passes every check", desc.Digest)
	}
	c.policyDecision() // policy.go
	if err := c.attestations(desc.Digest); err != nil {
		return c.findings, err
	}
	return c.findings, c.keylessAttestations(desc.Digest) // keyless.go
}

// providerTag judges a tag as OpenTofu's oci_mirror reads the tags of a
// provider repository: it lists every tag that parses as a version (with
// _ for +) and resolves each listed version's canonical tag. Tags it
// ignores mark the checker unread; a listed tag whose canonical tag is
// missing is an error, as OpenTofu then fails.
func (c *checker) providerTag(tag string) error {
	if isDigest(tag) || names.CanonicalTag(tag) {
		return nil
	}
	v, listed := names.ListedVersion(tag)
	if !listed {
		c.unread = "OpenTofu never reads this tag"
		c.add(SeverityWarning, "tag %q is not a version: OpenTofu's oci_mirror ignores it (version tags are canonical semver, with _ for +, like 1.2.3)", tag)
		return nil
	}
	canonical := names.TagForVersion(v)
	_, err := c.repo.Resolve(c.ctx, canonical)
	switch {
	case err == nil:
		c.add(SeverityWarning, "tag %q is listed by OpenTofu as version %s, which it installs from tag %q: this tag is never read", tag, v, canonical)
	case oci.IsNotFound(err):
		c.add(SeverityError, "tag %q is listed by OpenTofu as version %s, and OpenTofu then fails resolving tag %q, which does not exist: tag the index %s (and remove %s)", tag, v, canonical, canonical, tag)
	default:
		return fmt.Errorf("resolving %s: %w", canonical, err)
	}
	// What the tag names is checked too, but tofu never reads it: its
	// errors are warnings.
	c.unread = "OpenTofu reads tag " + canonical + ", not this one"
	return nil
}

func (c *checker) provider(desc ocispec.Descriptor) error {
	c.kind = names.KindProvider
	pv, err := oci.ReadProviderIndex(c.ctx, c.repo, desc)
	if err != nil {
		return c.problem(err)
	}
	if len(pv.Platforms) == 0 {
		c.add(SeverityError, "index has no %s manifest: OpenTofu finds no package for any platform", oci.ArtifactTypeProviderTarget)
	}
	zips := map[names.Platform]ocispec.Descriptor{}
	platforms := pv.SortedPlatforms()
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
	c.typeAgrees(prov)
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

// typeAgrees checks that the repository serves the provider type the
// release was published as (a template maps type T to a repository
// ending in T): under another type tofu installs the packages and then
// finds no terraform-provider-<type> executable.
func (c *checker) typeAgrees(prov *oci.Provenance) {
	if prov == nil || prov.Type == "" || c.layout || names.RepositoryServesType(c.repoName, prov.Type) {
		return
	}
	served := c.repoName[strings.LastIndex(c.repoName, "/")+1:]
	c.add(SeverityError, "the release is of provider type %s (%s%s), but repository %s serves type %s: tofu would find no %s%s executable in it",
		prov.Type, names.ProviderFilePrefix, prov.Type, c.repoName, served, names.ProviderFilePrefix, served)
}

// provenance checks the SHA256SUMS, signature and keys stored with a
// release as OpenTofu, installing it through the proxy's registry
// protocol, would (release.CheckProvenance), and that SHA256SUMS gives
// each platform's zip the digest the index holds.
func (c *checker) provenance(desc ocispec.Descriptor, zips map[names.Platform]ocispec.Descriptor) (*oci.Provenance, error) {
	prov, files, err := oci.ReadProvenance(c.ctx, c.repo, desc)
	if err != nil {
		return nil, c.problem(fmt.Errorf("provenance: %w", err))
	}
	warnings, err := release.CheckProvenance(files)
	for _, w := range warnings {
		c.add(SeverityWarning, "provenance: %s", w)
	}
	if err != nil {
		c.add(SeverityError, "provenance: %v: OpenTofu refuses the release through the registry protocol", err)
	}
	if files.SHA256SUMS.Data == nil {
		return prov, nil
	}
	sums, err := sha256sums.Read(files.SHA256SUMS.Data)
	if err != nil {
		return prov, nil // reported above
	}
	for p, z := range zips {
		name := prov.Platforms[p.String()].Filename
		if sum, err := sums.Lookup(name); err != nil {
			c.add(SeverityError, "%s: %v", p, err)
		} else if sum != z.Digest.Encoded() {
			c.add(SeverityError, "%s: zip digest %s is not what SHA256SUMS lists for %q", p, z.Digest, name)
		}
	}
	return prov, nil
}

// manifest checks an image manifest: a module (any tag may name one), or
// a provider platform manifest tagged directly, which OpenTofu refuses
// when it reads the tag.
func (c *checker) manifest(desc ocispec.Descriptor, tag string) error {
	// A registry's tag resolution carries no artifactType: read the body.
	b, err := oci.FetchManifest(c.ctx, c.repo, desc)
	if err != nil {
		return c.problem(err)
	}
	var head struct {
		ArtifactType string `json:"artifactType"`
	}
	if json.Unmarshal(b, &head) == nil && head.ArtifactType == oci.ArtifactTypeProviderTarget {
		if err := c.providerTag(tag); err != nil {
			return err
		}
		c.add(SeverityError, "tag points to a provider platform manifest; OpenTofu needs providers tagged as an index")
		return nil
	}
	if head.ArtifactType == oci.ArtifactTypeTofuRelease {
		return c.tofuRelease(desc, b)
	}
	return c.module(desc, b)
}

func (c *checker) module(desc ocispec.Descriptor, body []byte) error {
	c.kind = names.KindModule
	z, err := oci.ParseModule(desc, body)
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

// tofuRelease checks an OpenTofu release artifact (oci-tofu push tofu) as
// the TofuDL mirror reads it: the config names the tag's version, every
// file it lists is a layer of that name, digest and size, and (unless
// SkipZips) every layer's content matches its digest.
func (c *checker) tofuRelease(desc ocispec.Descriptor, body []byte) error {
	c.kind = names.KindTofu
	cfg, layers, err := oci.ReadTofuReleaseBody(c.ctx, c.repo, desc, body)
	if err != nil {
		return c.problem(err)
	}
	if c.tag != "" && !isDigest(c.tag) && cfg.Version != c.tag {
		c.add(SeverityError, "OpenTofu release: the tag %s holds version %q", c.tag, cfg.Version)
	}
	if len(cfg.Files) == 0 {
		c.add(SeverityError, "OpenTofu release %s lists no files", cfg.Version)
	}
	for _, f := range cfg.Files {
		l, ok := layers[f.Name]
		switch {
		case !ok:
			c.add(SeverityError, "OpenTofu release %s lists %s but has no layer for it", cfg.Version, f.Name)
		case l.Digest.Encoded() != f.SHA256 || l.Size != f.Size:
			c.add(SeverityError, "OpenTofu release %s: the layer of %s (%s, %d bytes) is not the listed file (sha256 %s, %d bytes)", cfg.Version, f.Name, l.Digest, l.Size, f.SHA256, f.Size)
		case !c.opts.SkipZips:
			if err := oci.FetchBlob(c.ctx, c.repo, l, 0, io.Discard); err != nil {
				if err := c.problem(fmt.Errorf("OpenTofu release %s: %s: %w", cfg.Version, f.Name, err)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func isDigest(ref string) bool { return digest.Digest(ref).Validate() == nil }
