// Package prune decides which versions of a repository to delete
// (retention) and deletes them: a version goes only when no keep rule
// holds for it (Decide), and it goes whole — its signatures,
// attestations and other referrers first, then the tagged manifest, then
// the manifests an index lists that nothing kept shares (Plan, Apply).
// The command is `oci-tofu prune` (docs/cli.md#prune).
package prune

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Downloads says when a stored version was last downloaded. repository
// is the OCI repository as the registry holds it (host/path, no tag),
// version the version tag.
type Downloads interface {
	LastDownload(repository, version string) (time.Time, bool)
}

// LastDownloads are Downloads from an audit trail's last downloads, by
// repository and version (audit.Tally.LastDownloads); a version tag
// stands for its version.
type LastDownloads map[[2]string]time.Time

// LastDownload is when a version of repository was last downloaded.
func (l LastDownloads) LastDownload(repository, tag string) (time.Time, bool) {
	version := tag
	if v, ok := names.VersionFromTag(tag); ok {
		version = v.String()
	}
	at, ok := l[[2]string{repository, version}]
	return at, ok
}

// Pins says which lock files pin a version of a repository (host/path,
// and the version tag); none when no lock file does.
type Pins interface {
	PinnedBy(repository, version string) []string
}

// Rules are the keep rules; a version is kept when any of them holds,
// and a rule left at its zero value keeps nothing.
type Rules struct {
	// KeepNewest keeps the newest N releases of each major version, and
	// the newest N pre-releases of a major that are newer than its
	// newest release (a release coming; one a release has overtaken is
	// not kept by this rule).
	KeepNewest int
	// KeepDownloadedWithin keeps a version Downloads says was downloaded
	// within that time before Now, and one too new to judge by its
	// downloads: pushed within that time, or at a time the registry does
	// not tell (fail safe: what cannot be shown unused is kept).
	KeepDownloadedWithin time.Duration
	Downloads            Downloads
	Now                  time.Time
	// Pins keeps every version a lock file pins.
	Pins Pins
	// Keep keeps a version the policy marks to keep ((*policy.Policy).Keeps).
	Keep func(kind names.Kind, address string, v names.Version) bool
}

// Repository is what the rules know of the repository judged.
type Repository struct {
	// Name is host/path, as the registry holds it.
	Name string
	Kind names.Kind
	// Addresses are what the policy matches: every address serve may show
	// the repository's artifacts under (policy.AddressFromRepository,
	// policy.ProviderAddress, policy.TofuAddress, the same names on other
	// hosts the templates map here). A version is kept when the rule
	// deciding any of them keeps it.
	Addresses []string
}

// Version is one version tag of the repository.
type Version struct {
	Tag     string
	Version names.Version
	// Pushed is when the version entered the registry, as far as the
	// registry tells (the creation time its attestation bundles record);
	// zero when it does not.
	Pushed time.Time
}

// Verdict is the rules' answer for one version: the reasons it is kept,
// none when it goes.
type Verdict struct {
	Version
	Kept []string
}

// Decide judges every version of repo by the rules, newest first.
func Decide(repo Repository, versions []Version, rules Rules) []Verdict {
	newest := keptAsNewest(versions, rules.KeepNewest)
	out := make([]Verdict, 0, len(versions))
	for _, v := range versions {
		var kept []string
		if why, ok := newest[v.Tag]; ok {
			kept = append(kept, why)
		}
		for _, f := range pinnedBy(rules.Pins, repo.Name, v.Tag) {
			kept = append(kept, "pinned by "+f)
		}
		if why, ok := rules.downloadedRecently(repo.Name, v); ok {
			kept = append(kept, why)
		}
		if rules.keptByPolicy(repo, v.Version) {
			kept = append(kept, "kept by the policy")
		}
		out = append(out, Verdict{Version: v, Kept: kept})
	}
	slices.SortStableFunc(out, func(a, b Verdict) int { return newestFirst(a.Version, b.Version) })
	return out
}

// newestFirst orders versions by precedence, newest first; versions of
// equal precedence (differing in build metadata only) by tag.
func newestFirst(a, b Version) int {
	switch {
	case a.Version.GreaterThan(b.Version):
		return -1
	case b.Version.GreaterThan(a.Version):
		return 1
	}
	return cmp.Compare(b.Tag, a.Tag)
}

// keptAsNewest maps the tags --keep-newest n keeps to why: per major
// version, the newest n releases, and the newest n pre-releases newer
// than the major's newest release. Pre-releases count apart so that
// release candidates never push releases out, and are kept only while
// no release has overtaken them.
func keptAsNewest(versions []Version, n int) map[string]string {
	kept := map[string]string{}
	if n <= 0 {
		return kept
	}
	byMajor := map[uint64][]Version{}
	for _, v := range versions {
		byMajor[v.Version.Major] = append(byMajor[v.Version.Major], v)
	}
	for major, vs := range byMajor {
		slices.SortFunc(vs, newestFirst)
		var releases, coming []Version
		for _, v := range vs {
			switch {
			case v.Version.Prerelease == "":
				releases = append(releases, v)
			case len(releases) == 0:
				coming = append(coming, v) // newer than every release of the major
			}
		}
		for _, v := range releases[:min(n, len(releases))] {
			kept[v.Tag] = fmt.Sprintf("newest %d of %d.x", n, major)
		}
		for _, v := range coming[:min(n, len(coming))] {
			kept[v.Tag] = fmt.Sprintf("newest %d pre-releases of %d.x not yet released", n, major)
		}
	}
	return kept
}

// pinnedBy is the lock files pinning a version, none without Pins.
func pinnedBy(p Pins, repository, tag string) []string {
	if p == nil {
		return nil
	}
	return p.PinnedBy(repository, tag)
}

// downloadedRecently says whether the version was downloaded within
// KeepDownloadedWithin, and when, or is too new to judge by that: pushed
// within it, or at a time unknown.
func (r Rules) downloadedRecently(repository string, v Version) (string, bool) {
	if r.KeepDownloadedWithin <= 0 || r.Downloads == nil {
		return "", false
	}
	within := FormatPeriod(r.KeepDownloadedWithin)
	last, ok := r.Downloads.LastDownload(repository, v.Tag)
	switch {
	case ok && r.Now.Sub(last) <= r.KeepDownloadedWithin:
		return fmt.Sprintf("downloaded %s (within %s)", last.UTC().Format(time.DateOnly), within), true
	case v.Pushed.IsZero():
		return fmt.Sprintf("push time unknown: not judged by downloads (within %s)", within), true
	case r.Now.Sub(v.Pushed) <= r.KeepDownloadedWithin:
		return fmt.Sprintf("pushed %s, too new to judge by downloads (within %s)", v.Pushed.UTC().Format(time.DateOnly), within), true
	}
	return "", false
}

// keptByPolicy says whether the policy keeps v under any of the
// repository's addresses.
func (r Rules) keptByPolicy(repo Repository, v names.Version) bool {
	if r.Keep == nil {
		return false
	}
	for _, a := range repo.Addresses {
		if r.Keep(repo.Kind, a, v) {
			return true
		}
	}
	return false
}
