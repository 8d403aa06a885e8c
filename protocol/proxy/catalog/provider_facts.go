package catalog

import (
	"context"
	"slices"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// What a provider's page says of the version shown beyond its listing:
// who signed it, the attestation rule's word, its SBOMs and their known
// vulnerabilities, and how much it is used. Each is what the proxy
// already decides with, read through the same caches (never verified
// anew here): the attestation rule's verdict (store.Repo.Admitted), the
// keyless verifier of --require-keyless, the SBOM summaries of the SBOM
// page (source.SBOMSummaryOf) and the vulnerability matches of the
// policy's vulnerabilities blocks (source.PlatformVulns).

// ProviderFacts supply what the page cannot read from a release itself;
// a nil func says the server has none of it.
type ProviderFacts struct {
	// Policy is the policy in force (nil: none): it tells a revoked
	// version from one denied otherwise.
	Policy func() *policy.Policy
	// Vulns is the vulnerability database the policy matches SBOMs
	// against (nil: none configured).
	Vulns *vulns.Live
	// Admission is the attestation rule's word on a stored release; nil
	// when serve has no attestation rule.
	Admission func(ctx context.Context, root source.Root) (*Admission, error)
	// Keyless is the identity whose keyless attestation of a stored
	// release --require-keyless's verifier accepts (nil: none).
	Keyless func(ctx context.Context, root source.Root) (*KeylessSigner, error)
	// Signers are the gate's verdicts on the signers the rule deciding
	// address requires of a stored release (nil: it requires none).
	Signers func(ctx context.Context, address string, root source.Root) ([]SignerVerdict, error)
	// Usage is an address's downloads and its version's (nil: none are
	// counted); the address as the audit trail names it.
	Usage func(ctx context.Context, kind names.Kind, address, version string) (*UsageCounts, error)
}

// Signer is who signed a release.
type Signer struct {
	// KeyIDs are the publisher OpenPGP keys its push verified.
	KeyIDs []string `json:"key_ids"`
	// Keyless is the certificate identity of its keyless attestation,
	// verified by serve's --require-keyless verifier; nil when none
	// verifies or none is configured (KeylessChecked says which).
	Keyless        *KeylessSigner `json:"keyless,omitempty"`
	KeylessChecked bool           `json:"keyless_checked"`
	// Required are the signers the policy's deciding rule requires
	// (signers = [...]), each with the gate's verdict.
	Required []SignerVerdict `json:"required"`
}

// SignerVerdict is one signer a policy rule requires: its entry as
// written (publisher:KEYID, attestation:KEYFILE, cosign:KEYFILE,
// notation:DIR, keyless:ISSUER=IDENTITY), whether the release is signed
// by it, and why not when the check says.
type SignerVerdict struct {
	Signer string `json:"signer"`
	Kind   string `json:"kind"`
	Signed bool   `json:"signed"`
	Why    string `json:"why,omitempty"`
}

// KeylessSigner is a keyless (Sigstore) signature's certificate
// identity and OIDC issuer.
type KeylessSigner struct {
	Issuer   string `json:"issuer"`
	Identity string `json:"identity"`
}

// Admission is the attestation rule's word on the release: the
// predicate type it requires, whether an attestation of it verified,
// or why not.
type Admission struct {
	PredicateType string `json:"predicate_type"`
	Admitted      bool   `json:"admitted"`
	Reason        string `json:"reason,omitempty"`
}

// SBOMFacts sum up the SBOMs of the platforms shown and what the
// vulnerability database finds in them.
type SBOMFacts struct {
	Platforms []PlatformSBOM `json:"platforms"`
	// Database is the vulnerability database's fingerprint ("" when
	// none is configured: Vulnerabilities is then empty).
	Database        string          `json:"database"`
	Vulnerabilities []Vulnerability `json:"vulnerabilities"`
}

// PlatformSBOM is one platform's SBOM in short: Missing says why there
// is none; otherwise its first Go executable's toolchain and main
// module, and how many modules its executables list.
type PlatformSBOM struct {
	Platform   string `json:"platform"`
	Stored     bool   `json:"stored"`
	Missing    string `json:"missing,omitempty"`
	GoVersion  string `json:"go_version,omitempty"`
	MainModule string `json:"main_module,omitempty"`
	Modules    int    `json:"modules"`
}

// Vulnerability is a database entry affecting a module of the SBOMs, on
// the platforms named. The database carries no severity.
type Vulnerability struct {
	ID        string   `json:"id"`
	Aliases   []string `json:"aliases"`
	Summary   string   `json:"summary,omitempty"`
	Module    string   `json:"module"`
	Version   string   `json:"version"`
	Fixed     string   `json:"fixed,omitempty"`
	Platforms []string `json:"platforms"`
}

// UsageCounts are an address's downloads delivered, from the audit
// trail: in the last 7 and 30 days, the distinct clients of the last 30
// days (at least; More when some were not kept), the version's, and
// From, whose counts.
type UsageCounts struct {
	Week    uint64         `json:"downloads_7d"`
	Month   uint64         `json:"downloads_30d"`
	Clients int            `json:"clients"`
	More    bool           `json:"more_clients,omitempty"`
	Version *VersionCounts `json:"version,omitempty" jsonschema:"the downloads of the version asked about"`
	From    string         `json:"from"`
}

// VersionCounts are one version's downloads delivered, counted as its
// address's are; Partial when some may not have been counted (a
// replica's record keeps the 20 most recently downloaded versions of an
// address).
type VersionCounts struct {
	Version string `json:"version"`
	Week    uint64 `json:"downloads_7d"`
	Month   uint64 `json:"downloads_30d"`
	Clients int    `json:"clients"`
	More    bool   `json:"more_clients,omitempty"`
	Partial bool   `json:"partial,omitempty"`
}

// downloads are the downloads of address (as the audit trail names it)
// and of its version, when the caller reads everything (the clients are
// the operator's to see) and the server counts them; nil otherwise.
func (h *Handlers) downloads(ctx context.Context, kind names.Kind, address, version string) (*UsageCounts, error) {
	if h.Facts.Usage == nil || respond.ReaderOf(ctx) != nil {
		return nil, nil
	}
	return h.Facts.Usage(ctx, kind, address, version)
}

// revocation is the message of the revoked block that denied version v
// of p, when one did (denied is the listing's denial).
func (h *Handlers) revocation(p names.Provider, v names.Version, denied *source.Denied) (string, bool) {
	if h.Facts.Policy == nil || denied.Rule == source.AttestationRule {
		return "", false
	}
	return h.Facts.Policy().Revocation(names.KindProvider, p.String(), v)
}

// allowedBy are the rule allowing version v of the kind's address
// (served) and the policy's reason, as its version check decides
// (policy.DecideVersion); "" without a policy.
func (h *Handlers) allowedBy(kind names.Kind, address string, v names.Version) (rule, reason string) {
	if h.Facts.Policy == nil {
		return "", ""
	}
	pol := h.Facts.Policy()
	if pol == nil {
		return "", ""
	}
	d := pol.DecideVersion(kind, address, v)
	return d.Rule, d.Reason
}

// releaseFacts adds to d the facts of the release at root, its
// platforms shown.
func (h *Handlers) releaseFacts(ctx context.Context, d *ProviderPage, root source.Root, rel *source.ProviderRelease) error {
	f := h.Facts
	d.Signer = Signer{KeyIDs: nonNil(rel.SigningKeyIDs)}
	reads := []func(context.Context) error{func(ctx context.Context) (err error) {
		d.SBOMs, err = h.sbomFacts(ctx, root, rel.Platforms)
		return err
	}, func(ctx context.Context) error {
		d.Artifacts = storedArtifacts(ctx, root)
		return nil
	}}
	if f.Keyless != nil {
		d.Signer.KeylessChecked = true
		reads = append(reads, func(ctx context.Context) (err error) {
			d.Signer.Keyless, err = f.Keyless(ctx, root)
			return err
		})
	}
	d.Signer.Required = []SignerVerdict{}
	if f.Signers != nil {
		reads = append(reads, func(ctx context.Context) error {
			vs, err := f.Signers(ctx, d.Address, root)
			d.Signer.Required = append(d.Signer.Required, vs...)
			return err
		})
	}
	if f.Admission != nil {
		reads = append(reads, func(ctx context.Context) (err error) {
			d.Attestation, err = f.Admission(ctx, root)
			return err
		})
	}
	reads = append(reads, func(ctx context.Context) (err error) {
		d.Downloads, err = h.downloads(ctx, names.KindProvider, d.Address, d.Version)
		return err
	})
	if err := h.Out.Store.Each(ctx, len(reads), func(ctx context.Context, i int) error { return reads[i](ctx) }); err != nil {
		return err
	}
	d.Artifacts.verdictsOn(d.Attestation)
	return nil
}

// sbomFacts are the SBOMs of platforms of root, summed up and matched
// against the database in force.
func (h *Handlers) sbomFacts(ctx context.Context, root source.Root, platforms []names.Platform) (SBOMFacts, error) {
	out := SBOMFacts{Platforms: make([]PlatformSBOM, len(platforms)), Vulnerabilities: []Vulnerability{}}
	var db *vulns.DB
	if h.Facts.Vulns != nil {
		db = h.Facts.Vulns.Current()
	}
	found := make([]policy.PlatformVulns, len(platforms))
	err := h.Out.Store.Each(ctx, len(platforms), func(ctx context.Context, i int) error {
		pl := platforms[i]
		if _, ok := root.Index.Platforms[pl]; !ok {
			out.Platforms[i] = PlatformSBOM{Platform: pl.String(), Missing: "not stored here"}
			return nil
		}
		s, err := source.SBOMSummaryOf(ctx, root, pl)
		if err != nil {
			return err
		}
		out.Platforms[i] = platformSBOM(pl, s)
		if db != nil {
			found[i], err = source.PlatformVulns(ctx, db, root, pl)
		}
		return err
	})
	if err != nil {
		return SBOMFacts{}, err
	}
	if db != nil {
		out.Database = db.Fingerprint()
		out.Vulnerabilities = vulnerabilities(found)
	}
	return out, nil
}

// platformSBOM is a platform's SBOM summary in short.
func platformSBOM(pl names.Platform, s source.SBOMSummary) PlatformSBOM {
	p := PlatformSBOM{Platform: pl.String(), Missing: s.Missing}
	if s.Summary == nil {
		return p
	}
	p.Stored = true
	for _, e := range s.Summary.Executables {
		if p.GoVersion == "" && e.GoVersion != "" {
			p.GoVersion, p.MainModule = e.GoVersion, e.MainModule
		}
		p.Modules += e.Modules
	}
	return p
}

// vulnerabilities are the findings of pvs, each entry and module once
// with the platforms it was found on, by ID.
func vulnerabilities(pvs []policy.PlatformVulns) []Vulnerability {
	out := []Vulnerability{}
	at := map[string]int{}
	for _, pv := range pvs {
		for _, f := range pv.Findings {
			k := f.ID + " " + f.Module + " " + f.Version
			i, ok := at[k]
			if !ok {
				i = len(out)
				at[k] = i
				out = append(out, Vulnerability{ID: f.ID, Aliases: nonNil(f.Aliases), Summary: f.Summary, Module: f.Module, Version: f.Version, Fixed: f.Fixed})
			}
			if !slices.Contains(out[i].Platforms, pv.Platform) {
				out[i].Platforms = append(out[i].Platforms, pv.Platform)
			}
		}
	}
	slices.SortFunc(out, func(a, b Vulnerability) int { return strings.Compare(a.ID+" "+a.Module, b.ID+" "+b.Module) })
	return out
}
