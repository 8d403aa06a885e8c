package publish

import (
	"context"
	"fmt"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// BackfillTarget is a repository of provider versions, and the one
// version to backfill (nil: every version tag).
type BackfillTarget struct {
	Ref     oci.Reference
	Version *names.Version
}

// BackfillOptions say how Backfill reaches the repositories and what it
// stores.
type BackfillOptions struct {
	// Open opens a target's repository.
	Open func(oci.Reference) (oci.Repository, error)
	// Platforms, when not empty, are the only platforms backfilled.
	Platforms []names.Platform
	// Attest, when set, attests each SBOM written.
	Attest *KeyAttester
	// Log is told each result as it comes, a line each (nil: nobody).
	Log func(format string, args ...any)
}

// BackfillResult is what became of one version's platform (Platform
// empty: of the whole version, which could not be read).
type BackfillResult struct {
	Detail     string `json:"detail,omitempty"`
	Platform   string `json:"platform,omitempty"`
	Repository string `json:"repository"`
	Status     string `json:"status"`
	Version    string `json:"version"`
}

// Backfilled is what Backfill did.
type Backfilled struct {
	Results []BackfillResult
	counts  map[string]int
}

// Count is the number of results with status.
func (b *Backfilled) Count(status release.SBOMStatus) int { return b.counts[string(status)] }

// Backfill stores the SBOMs the targets' versions lack
// (release.BackfillSBOMs), each attested with opts.Attest. A version that
// cannot be read, or whose SBOMs cannot be stored, is a result
// (release.SBOMFailed) and the others go on; err is for a repository that
// cannot be opened or listed.
func Backfill(ctx context.Context, targets []BackfillTarget, opts BackfillOptions) (*Backfilled, error) {
	b := &Backfilled{counts: map[string]int{}}
	for _, t := range targets {
		if err := b.target(ctx, t, opts); err != nil {
			return b, err
		}
	}
	return b, nil
}

// target backfills one target's versions.
func (b *Backfilled) target(ctx context.Context, t BackfillTarget, opts BackfillOptions) error {
	repo, err := opts.Open(t.Ref)
	if err != nil {
		return err
	}
	sbomOpts := release.SBOMOptions{}
	if opts.Attest != nil {
		sbomOpts.Attest = SBOMAttestation(*opts.Attest, t.Ref.Name())
	}
	versions := []names.Version{}
	if t.Version != nil {
		versions = append(versions, *t.Version)
	} else if versions, err = oci.ListVersions(ctx, repo); err != nil {
		return fmt.Errorf("%s: %w", t.Ref.Name(), err)
	}
	typ := t.Ref.Repository[strings.LastIndex(t.Ref.Repository, "/")+1:]
	for _, v := range versions {
		b.version(ctx, repo, t.Ref.Name(), typ, v, sbomOpts, opts)
	}
	return nil
}

// version backfills one version's platforms.
func (b *Backfilled) version(ctx context.Context, repo oci.Repository, repository, typ string, v names.Version, sbomOpts release.SBOMOptions, opts BackfillOptions) {
	pv, err := oci.ResolveProvider(ctx, repo, v)
	if err != nil {
		b.note(opts.Log, BackfillResult{Repository: repository, Version: v.String(), Status: string(release.SBOMFailed), Detail: err.Error()})
		return
	}
	got, err := release.BackfillSBOMs(ctx, repo, pv, typ, opts.Platforms, sbomOpts)
	for _, r := range got {
		if r.Status == "" { // not reached: the registry failed first
			continue
		}
		detail := r.Referrer.String()
		if r.Err != nil {
			detail = r.Err.Error()
		}
		if r.Attested {
			detail += ", attested"
		}
		b.note(opts.Log, BackfillResult{Repository: repository, Version: v.String(), Platform: r.Platform.String(), Status: string(r.Status), Detail: detail})
	}
	if err != nil {
		b.note(opts.Log, BackfillResult{Repository: repository, Version: v.String(), Status: string(release.SBOMFailed), Detail: err.Error()})
	}
}

// note records r, counts it and logs it.
func (b *Backfilled) note(log func(string, ...any), r BackfillResult) {
	b.counts[r.Status]++
	b.Results = append(b.Results, r)
	if log == nil {
		return
	}
	line := fmt.Sprintf("%-13s %s %s %s", r.Status, r.Repository, r.Version, r.Platform)
	if r.Detail != "" {
		line += ": " + r.Detail
	}
	log("%s", strings.TrimRight(line, " "))
}

// Report prints the counts of each status (or with rep.JSON the results
// with them).
func (b *Backfilled) Report(rep *report.Reporter) error {
	written, present, noExec, failed := b.Count(release.SBOMWritten), b.Count(release.SBOMPresent), b.Count(release.SBOMNoExecutable), b.Count(release.SBOMFailed)
	summary := fmt.Sprintf("%d written, %d present already, %d without executable, %d failed", written, present, noExec, failed)
	if written == 0 {
		summary += ": nothing written"
	}
	return rep.Result(map[string]any{"results": b.Results, "written": written, "present": present, "no_executable": noExec, "failed": failed}, summary)
}
