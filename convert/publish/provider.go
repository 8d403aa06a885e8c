package publish

import (
	"context"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/providerdocs"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Target is where a push goes and how.
type Target struct {
	// Repo is Ref opened.
	Repo oci.Repository
	// Ref is the repository: attestations name it (Ref.Name()).
	Ref oci.Reference
	// Options are the push's (progress, --replace).
	Options oci.PushOptions
	// Also are the tags written beside the version's (--also-tag).
	Also []string
	// Attest, when set, signs and attests the release (--attest-key).
	Attest *KeyAttester
}

// ProviderTarget is a Target for a provider release.
type ProviderTarget struct {
	Target
	// NoSBOM stores no SBOMs (--no-sbom). An OCI layout gets none either:
	// its index.json lists only the tagged versions, which is what `crane
	// push DIR` and skopeo take a layout by, and referrers would be listed
	// there untagged (`sbom --backfill` stores them where it is copied).
	NoSBOM bool
	// SumsSigner is the key SHA256SUMS was signed with at push time
	// (--sign-key), if it was: the predicate says "signed", not
	// "verified".
	SumsSigner *pgp.Signer
	// Report, when set, is told that an OCI layout gets no SBOMs.
	Report *report.Reporter
	// Imported marks a release read from a providers mirror directory
	// (`push mirror`): its repository is the template's (not recorded in
	// the release, nor checked against it: release.Provider.CheckServedAs
	// is), and it is attested after its tags are written, as `push
	// mirror` always has.
	Imported bool
	// DocsDir, when set, is the release's documentation tree (push
	// provider --docs): read before anything is written and stored as a
	// referrer of the index before any tag is (providerdocs.Attach); a
	// release up to date gets it after, when it has none. Other
	// documentation stored for the release is refused unless
	// Options.Replace. An OCI layout stores none. DocsStored, when set,
	// is given what became of it (left zero when none was stored).
	DocsDir    string
	DocsStored *providerdocs.Stored
}

// PushProvider pushes rel, verified, to t with its SBOMs; with t.Attest
// it signs and attests the root (release.ProviderPredicateType) as Push
// does: the Sigstore bundle referrers written before any tag is, cosign's
// tag schema while the version tags are, a release already up to date
// attested after (attest.Attach; t.Imported: always after); each SBOM is
// attested too; t.DocsDir is stored as its documentation. err and
// attestErr are Push's; the documentation's error, for a release up to
// date, is attestErr (nothing was written).
func PushProvider(ctx context.Context, rel *release.Provider, t ProviderTarget) (res oci.PushResult, err, attestErr error) {
	if t.DocsDir != "" {
		return pushWithDocs(ctx, rel, t) // provider_docs.go
	}
	return pushProvider(ctx, rel, t)
}

// pushProvider is PushProvider without the documentation.
func pushProvider(ctx context.Context, rel *release.Provider, t ProviderTarget) (res oci.PushResult, err, attestErr error) {
	if t.Report != nil && t.Ref.Layout && !t.NoSBOM {
		t.Report.Infof("%s: no SBOMs in an OCI layout (its index.json keeps to the tagged versions, as crane push and skopeo read it): oci-tofu sbom --backfill stores them where it is copied", t.Ref.Name())
	}
	if !t.Ref.Layout && !t.Imported {
		rel.Repository = t.Ref.Repository
	}
	rel.SBOM.Skip = t.NoSBOM || t.Ref.Layout
	if t.Attest == nil {
		return Push(ctx, t.Repo, rel, t.Options, nil, t.Also...)
	}
	if !rel.SBOM.Skip {
		rel.SBOM.Attest = SBOMAttestation(*t.Attest, t.Ref.Name())
	}
	att := providerKey{key: *t.Attest, rel: rel, repository: t.Ref.Name(), sumsSigner: t.SumsSigner}
	if !t.Imported {
		return Push(ctx, t.Repo, rel, t.Options, att, t.Also...)
	}
	res, err, _ = Push(ctx, t.Repo, rel, t.Options, nil, t.Also...)
	if err != nil {
		return res, err, nil
	}
	return res, nil, att.UpToDate(ctx, t.Repo, res.Root)
}

// providerKey is the RootAttester of a key for a provider release pushed
// to repository.
type providerKey struct {
	key        KeyAttester
	rel        *release.Provider
	repository string
	sumsSigner *pgp.Signer
}

// BeforeTag makes the signature and attestation of root and writes them
// as referrers; their tag-schema form is left for while tagging.
func (p providerKey) BeforeTag(ctx context.Context, repo oci.Repository, root ocispec.Descriptor) (func(context.Context) error, error) {
	pred, err := p.predicate(ctx, repo, root)
	if err != nil {
		return nil, err
	}
	at, err := attest.Sign(p.key.Signer, p.repository, root.Digest, release.ProviderPredicateType, pred)
	if err != nil {
		return nil, err
	}
	sigRef, attRef, err := at.Describe(root).Refer(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("signing and attesting %s failed: %w", root.Digest, err)
	}
	return func(ctx context.Context) error {
		tagged, err := at.Tag(ctx, repo)
		if err == nil {
			tagged.SignatureReferrer, tagged.AttestationReferrer = sigRef, attRef
			p.key.reportAttached(root.Digest, tagged, release.ProviderPredicateType)
		}
		return err
	}, nil
}

// UpToDate signs and attests root in both forms at once, after the
// push, unless root carries the key's signature and attestation in both
// forms already (attest.Complete): a re-push of an attested release
// writes nothing.
func (p providerKey) UpToDate(ctx context.Context, repo oci.Repository, root ocispec.Descriptor) error {
	if done, err := attest.Complete(ctx, repo, root.Digest, p.key.Key(), release.ProviderPredicateType); err == nil && done {
		return nil
	}
	pred, err := p.predicate(ctx, repo, root)
	if err != nil {
		return err
	}
	return p.key.AttachPushed(ctx, repo, p.repository, root.Digest, release.ProviderPredicateType, pred)
}

// predicate is what the attestation of the pushed root says.
func (p providerKey) predicate(ctx context.Context, repo oci.Repository, root ocispec.Descriptor) (any, error) {
	pred, err := p.rel.Predicate(ctx, repo, root, p.sumsSigner, p.key.now(), p.key.Version)
	if err != nil {
		return nil, fmt.Errorf("%s@%s was pushed, but reading it back to attest it failed: %w", p.repository, root.Digest, err)
	}
	return pred, nil
}

// ReportRead tells rep what was read of rel (read with signer, when
// --sign-key gave one): its signature, its platforms and its warnings.
func ReportRead(rep *report.Reporter, rel *release.Provider, signer *pgp.Signer) {
	rep.Infof("%s %s: %s; %s to check against SHA256SUMS and push", rel.Type, rel.Version, signatureNote(rel, signer), names.Plural(len(rel.Packages), "platform"))
	rep.Warn(rel.Type+" "+rel.Version, rel.Warnings)
}

// signatureNote says what became of the release's signature: verified,
// made now with --sign-key (nothing verified), or none (--unsigned). The
// zips are checked later, while pushing.
func signatureNote(rel *release.Provider, signer *pgp.Signer) string {
	switch {
	case len(rel.KeyIDs) == 0:
		return "unsigned (--unsigned)"
	case signer != nil && rel.KeyIDs[0] == signer.KeyID():
		return "SHA256SUMS signed now with --sign-key " + rel.KeyIDs[0]
	}
	return "signature verified (key " + rel.KeyIDs[0] + ")"
}

// ReportPushed is rel's push to ref (tagged) as rep prints it: the
// pushed line, or with JSON what was pushed, checked and stored.
func ReportPushed(rep *report.Reporter, rel *release.Provider, ref oci.Reference, res oci.PushResult, docs *providerdocs.Stored) error {
	platforms := make([]string, len(rel.Packages))
	for i, p := range rel.Packages {
		platforms[i] = p.Platform.String()
	}
	warnings := append([]string{}, rel.Warnings...) // [] in JSON
	if note := rel.VersionIndexNote(); note != "" {
		rep.Warn(rel.Type+" "+rel.Version, []string{note})
		warnings = append(warnings, note)
	}
	result := map[string]any{
		"reference":      ref.String(),
		"digest":         res.Root.Digest.String(),
		"type":           rel.Type,
		"version":        rel.Version,
		"platforms":      platforms,
		"signing_keys":   rel.KeyIDs,
		"up_to_date":     res.UpToDate,
		"uploaded":       res.Uploaded,
		"skipped":        res.Skipped,
		"uploaded_bytes": res.UploadedBytes,
		"warnings":       warnings,
		"sboms":          ReportSBOMs(rep, rel),
	}
	if docs != nil && docs.Referrer.Digest != "" {
		result["docs"] = docsResult(*docs)
	}
	return rep.Result(result, report.PushedLine(ref, res))
}

// ReportSBOMs tells rep what became of rel's SBOMs (a line, a warning
// for each platform left without one) and returns them for JSON.
func ReportSBOMs(rep *report.Reporter, rel *release.Provider) []map[string]any {
	out := []map[string]any{}
	written, present := 0, 0
	for _, r := range rel.SBOMs() {
		m := map[string]any{"platform": r.Platform.String(), "manifest": r.Manifest.String(), "status": string(r.Status)}
		if r.Referrer != "" {
			m["referrer"] = r.Referrer.String()
		}
		if r.Attested {
			m["attested"] = true
		}
		switch r.Status {
		case release.SBOMWritten:
			written++
		case release.SBOMPresent:
			present++
		default:
			m["reason"] = r.Err.Error()
			rep.Warn(rel.Type+" "+rel.Version, []string{fmt.Sprintf("%s: no SBOM stored: %v", r.Platform, r.Err)})
		}
		out = append(out, m)
	}
	if written+present > 0 {
		rep.Infof("%s %s: %s written, %d present already", rel.Type, rel.Version, names.Plural(written, "SBOM"), present)
	}
	return out
}

// VersionTagged is ref with the tag version gives it (names.TagForVersion:
// '+' written as '_'); an error when version is not one.
func VersionTagged(ref oci.Reference, version string) (oci.Reference, error) {
	v, err := names.ParseVersion(version)
	if err != nil {
		return oci.Reference{}, err
	}
	return ref.WithReference(names.TagForVersion(v)), nil
}
