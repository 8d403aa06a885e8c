// Package vulnscan answers which provider versions a registry holds
// contain a module, or a Go standard library, that a vulnerability
// database says is affected: for each version tag of a provider
// repository and each platform of its index, the SBOM stored as the
// platform manifest's referrer (convert/sbom) is read and its modules
// matched (policy.MatchSBOM, convert/vulns: module-level matching, no
// symbol reachability). A platform without an SBOM is reported as such,
// so a report says what it covers.
package vulnscan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// DefaultConcurrency is how many versions Scan reads at once.
const DefaultConcurrency = 32

// Options tune Scan.
type Options struct {
	// Concurrency bounds the versions read at once (0: DefaultConcurrency).
	Concurrency int
}

// Repository is what Scan found in one repository.
type Repository struct {
	Repository string    `json:"repository"`
	Versions   []Version `json:"versions"`
}

// Version is one version tag.
type Version struct {
	Version string `json:"version"`
	Digest  string `json:"digest,omitempty"`
	// Error says why the version could not be read as a provider index
	// (another kind of artifact, a broken index): it is not scanned.
	Error     string     `json:"error,omitempty"`
	Platforms []Platform `json:"platforms"`
}

// Platform is one platform of a version.
type Platform struct {
	Platform string `json:"platform"`
	SBOM     bool   `json:"sbom"`
	// Error says why the SBOM referrers stored could not be read.
	Error     string    `json:"error,omitempty"`
	GoVersion string    `json:"go_version,omitempty"`
	Modules   int       `json:"modules,omitempty"`
	Findings  []Finding `json:"findings,omitempty"`
}

// Finding is an entry affecting a module of a platform (vulns.Finding).
type Finding struct {
	ID      string   `json:"id"`
	Aliases []string `json:"aliases,omitempty"`
	Summary string   `json:"summary,omitempty"`
	Module  string   `json:"module"`
	Version string   `json:"version"`
	Fixed   string   `json:"fixed,omitempty"`
}

// Findings are fs as vulns.Findings.
func Findings(fs []Finding) []vulns.Finding {
	out := make([]vulns.Finding, len(fs))
	for i, f := range fs {
		out[i] = vulns.Finding(f)
	}
	return out
}

// Affected reports whether any platform of v has findings.
func (v Version) Affected() bool {
	return slices.ContainsFunc(v.Platforms, func(p Platform) bool { return len(p.Findings) > 0 })
}

// Missing are the platforms of v without an SBOM.
func (v Version) Missing() []string {
	var out []string
	for _, p := range v.Platforms {
		if !p.SBOM {
			out = append(out, p.Platform)
		}
	}
	return out
}

// Scan reads every version tag of repo (named name) and each platform's
// SBOM, and matches them against db, at most opts.Concurrency versions
// at once. A version that is no provider index is reported with its
// error; failing to read the registry fails the scan.
func Scan(ctx context.Context, repo oci.ReadOnlyRepository, name string, db *vulns.DB, opts Options) (*Repository, error) {
	vs, err := oci.ListVersions(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("%s: listing versions: %w", name, err)
	}
	out := &Repository{Repository: name, Versions: make([]Version, len(vs))}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cmpOr(opts.Concurrency, DefaultConcurrency))
	for i, v := range vs {
		g.Go(func() error {
			sv, err := scanVersion(gctx, repo, db, v)
			if err != nil {
				return fmt.Errorf("%s %s: %w", name, v, err)
			}
			out.Versions[i] = sv
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

func cmpOr(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}

// scanVersion reads version v's index and its platforms' SBOMs.
func scanVersion(ctx context.Context, repo oci.ReadOnlyRepository, db *vulns.DB, v names.Version) (Version, error) {
	out := Version{Version: v.String(), Platforms: []Platform{}}
	pv, err := oci.ResolveProvider(ctx, repo, v)
	if err != nil {
		if f := oci.Classify(err); f != oci.FailureInvalid && f != oci.FailureNotFound && f != oci.FailureCorrupt {
			return out, err
		}
		out.Error = err.Error()
		return out, nil
	}
	out.Digest = pv.Index.Digest.String()
	pls := make([]names.Platform, 0, len(pv.Platforms))
	for pl := range pv.Platforms {
		pls = append(pls, pl)
	}
	slices.SortFunc(pls, func(a, b names.Platform) int { return strings.Compare(a.String(), b.String()) })
	for _, pl := range pls {
		st, err := sbom.Read(ctx, repo, pv.Platforms[pl].Digest)
		var doc *sbom.Document
		var bad string
		switch {
		case err == nil:
			doc = st.Doc
		case errors.Is(err, sbom.ErrNoSBOM):
		case errors.Is(err, sbom.ErrBadSBOM):
			bad = err.Error()
		default:
			return out, err
		}
		m := policy.MatchSBOM(db, pl.String(), doc)
		p := Platform{Platform: m.Platform, SBOM: m.SBOM, Error: bad, GoVersion: m.GoVersion, Modules: m.Modules}
		for _, f := range m.Findings {
			p.Findings = append(p.Findings, Finding(f))
		}
		out.Platforms = append(out.Platforms, p)
	}
	return out, nil
}
