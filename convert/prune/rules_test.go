package prune

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

func versionsOf(t *testing.T, tags ...string) []Version {
	t.Helper()
	var out []Version
	for _, tag := range tags {
		v, ok := names.VersionFromTag(tag)
		if !ok {
			t.Fatalf("%s is no version tag", tag)
		}
		out = append(out, Version{Tag: tag, Version: v})
	}
	return out
}

// kept lists the tags the verdicts keep, and the ones they let go.
func kept(verdicts []Verdict) (keep, goes []string) {
	for _, v := range verdicts {
		if len(v.Kept) > 0 {
			keep = append(keep, v.Tag)
		} else {
			goes = append(goes, v.Tag)
		}
	}
	return keep, goes
}

func reasons(verdicts []Verdict, tag string) string {
	for _, v := range verdicts {
		if v.Tag == tag {
			return strings.Join(v.Kept, "; ")
		}
	}
	return "(no such version)"
}

var repo = Repository{Name: "reg.example/providers/acme/widgets", Kind: names.KindProvider, Addresses: []string{"registry.opentofu.org/acme/widgets"}}

func TestKeepNewestPerMajor(t *testing.T) {
	vs := versionsOf(t, "1.0.0", "1.2.0", "1.10.0", "1.9.0", "2.0.0", "2.1.0-rc1", "2.0.0-beta1", "3.0.0-rc1", "3.0.0-rc2", "0.9.0", "0.1.0", "1.10.0_build.2")
	got := Decide(repo, vs, Rules{KeepNewest: 2})
	keep, goes := kept(got)
	wantKeep := []string{"3.0.0-rc2", "3.0.0-rc1", "2.1.0-rc1", "2.0.0", "1.10.0_build.2", "1.10.0", "0.9.0", "0.1.0"}
	wantGoes := []string{"2.0.0-beta1", "1.9.0", "1.2.0", "1.0.0"}
	if !slices.Equal(keep, wantKeep) || !slices.Equal(goes, wantGoes) {
		t.Errorf("kept %v, goes %v; want kept %v, goes %v", keep, goes, wantKeep, wantGoes)
	}
	if r := reasons(got, "1.10.0"); r != "newest 2 of 1.x" {
		t.Errorf("1.10.0 kept because %q", r)
	}
	// 2.1.0-rc1 is newer than 2.0.0, the newest 2.x release; 2.0.0-beta1
	// was overtaken by 2.0.0.
	if r := reasons(got, "2.1.0-rc1"); r != "newest 2 pre-releases of 2.x not yet released" {
		t.Errorf("2.1.0-rc1 kept because %q", r)
	}
}

func TestNoRuleKeepsNothing(t *testing.T) {
	keep, goes := kept(Decide(repo, versionsOf(t, "1.0.0", "2.0.0"), Rules{}))
	if len(keep) != 0 || len(goes) != 2 {
		t.Errorf("without rules: kept %v, goes %v", keep, goes)
	}
}

func TestKeepLocked(t *testing.T) {
	pins := NewLockPins([]Locked{
		{File: "prod/.terraform.lock.hcl", Provider: names.Provider{Hostname: "registry.opentofu.org", Namespace: "acme", Type: "widgets"}, Tag: "1.0.0"},
		{File: "dev/.terraform.lock.hcl", Provider: names.Provider{Hostname: "registry.opentofu.org", Namespace: "acme", Type: "widgets"}, Tag: "1.0.0"},
		{File: "dev/.terraform.lock.hcl", Provider: names.Provider{Hostname: "registry.opentofu.org", Namespace: "acme", Type: "gadgets"}, Tag: "1.1.0"},
	}, func(p names.Provider) []string {
		return []string{"reg.example/providers/" + p.Namespace + "/" + p.Type}
	})
	got := Decide(repo, versionsOf(t, "1.0.0", "1.1.0"), Rules{Pins: pins})
	keep, _ := kept(got)
	if !slices.Equal(keep, []string{"1.0.0"}) {
		t.Errorf("kept %v, want only 1.0.0 (1.1.0 is pinned for another provider)", keep)
	}
	if r := reasons(got, "1.0.0"); r != "pinned by prod/.terraform.lock.hcl; pinned by dev/.terraform.lock.hcl" {
		t.Errorf("1.0.0 kept because %q", r)
	}
}

type downloads map[string]time.Time

func (d downloads) LastDownload(repository, version string) (time.Time, bool) {
	t, ok := d[repository+":"+version]
	return t, ok
}

func TestKeepDownloadedWithin(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	d := downloads{
		repo.Name + ":1.0.0": now.Add(-89 * 24 * time.Hour),
		repo.Name + ":1.1.0": now.Add(-91 * 24 * time.Hour),
		"other/repo:1.2.0":   now,
	}
	vs := pushedAt(versionsOf(t, "1.0.0", "1.1.0", "1.2.0"), now.Add(-200*24*time.Hour))
	got := Decide(repo, vs, Rules{KeepDownloadedWithin: 90 * 24 * time.Hour, Downloads: d, Now: now})
	keep, _ := kept(got)
	if !slices.Equal(keep, []string{"1.0.0"}) {
		t.Errorf("kept %v, want only 1.0.0 (downloaded 89 days ago)", keep)
	}
	if r := reasons(got, "1.0.0"); r != "downloaded 2025-03-04 (within 90d)" {
		t.Errorf("1.0.0 kept because %q", r)
	}
}

func pushedAt(vs []Version, at time.Time) []Version {
	for i := range vs {
		vs[i].Pushed = at
	}
	return vs
}

// A version never downloaded is judged by --keep-downloaded-within only
// once it has been in the registry longer than the period: one pushed
// within it, or at a time the registry does not tell, is too new to
// judge, and kept.
func TestKeepDownloadedWithinTooNew(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	vs := versionsOf(t, "1.0.0", "1.1.0", "1.2.0")
	vs[0].Pushed = now.Add(-100 * 24 * time.Hour)
	vs[1].Pushed = now.Add(-24 * time.Hour)
	got := Decide(repo, vs, Rules{KeepDownloadedWithin: 90 * 24 * time.Hour, Downloads: downloads{}, Now: now})
	keep, goes := kept(got)
	if !slices.Equal(keep, []string{"1.2.0", "1.1.0"}) || !slices.Equal(goes, []string{"1.0.0"}) {
		t.Errorf("kept %v, goes %v; want 1.1.0 (pushed yesterday) and 1.2.0 (push time unknown) kept", keep, goes)
	}
	if r := reasons(got, "1.1.0"); r != "pushed 2025-05-31, too new to judge by downloads (within 90d)" {
		t.Errorf("1.1.0 kept because %q", r)
	}
	if r := reasons(got, "1.2.0"); r != "push time unknown: not judged by downloads (within 90d)" {
		t.Errorf("1.2.0 kept because %q", r)
	}
}

// The policy is asked about every address serve may show the repository
// under: a keep block for any of them keeps the version.
func TestKeepByPolicyAnyAddress(t *testing.T) {
	r := repo
	r.Addresses = []string{"registry.opentofu.org/acme/widgets", "tofu.example.com/acme/widgets"}
	keep := func(_ names.Kind, address string, v names.Version) bool {
		return address == "tofu.example.com/acme/widgets" && v.String() == "1.0.0"
	}
	k, goes := kept(Decide(r, versionsOf(t, "1.0.0", "1.1.0"), Rules{Keep: keep}))
	if !slices.Equal(k, []string{"1.0.0"}) || !slices.Equal(goes, []string{"1.1.0"}) {
		t.Errorf("kept %v, goes %v; want 1.0.0 kept by its second address", k, goes)
	}
}

func TestKeepByPolicy(t *testing.T) {
	var asked []string
	keep := func(kind names.Kind, address string, v names.Version) bool {
		asked = append(asked, string(kind)+" "+address+" "+v.String())
		return v.String() == "1.0.0+build.1"
	}
	got := Decide(repo, versionsOf(t, "1.0.0_build.1", "1.1.0"), Rules{Keep: keep})
	k, _ := kept(got)
	if !slices.Equal(k, []string{"1.0.0_build.1"}) || reasons(got, "1.0.0_build.1") != "kept by the policy" {
		t.Errorf("kept %v (%q)", k, reasons(got, "1.0.0_build.1"))
	}
	if !slices.Contains(asked, "provider registry.opentofu.org/acme/widgets 1.0.0+build.1") {
		t.Errorf("the policy was asked %v", asked)
	}
}

// Rules combine: a version goes only when none keeps it, and every rule
// that keeps it is named.
func TestRulesCombine(t *testing.T) {
	pins := LockPins{{repo.Name, "1.0.0"}: {"a/.terraform.lock.hcl"}, {repo.Name, "1.3.0"}: {"b/.terraform.lock.hcl"}}
	policyKeeps := func(_ names.Kind, _ string, v names.Version) bool { return v.String() == "1.1.0" }
	got := Decide(repo, versionsOf(t, "1.0.0", "1.1.0", "1.2.0", "1.3.0"), Rules{KeepNewest: 1, Pins: pins, Keep: policyKeeps})
	keep, goes := kept(got)
	if !slices.Equal(keep, []string{"1.3.0", "1.1.0", "1.0.0"}) || !slices.Equal(goes, []string{"1.2.0"}) {
		t.Errorf("kept %v, goes %v", keep, goes)
	}
	if r := reasons(got, "1.3.0"); r != "newest 1 of 1.x; pinned by b/.terraform.lock.hcl" {
		t.Errorf("1.3.0 kept because %q", r)
	}
}

func TestParsePeriod(t *testing.T) {
	for in, want := range map[string]time.Duration{"90d": 90 * 24 * time.Hour, "36h": 36 * time.Hour, "1d": 24 * time.Hour} {
		if d, err := ParsePeriod(in); err != nil || d != want {
			t.Errorf("ParsePeriod(%q) = %v, %v; want %v", in, d, err, want)
		}
	}
	for _, in := range []string{"", "0d", "-1d", "d", "90", "1w", "-2h"} {
		if d, err := ParsePeriod(in); err == nil {
			t.Errorf("ParsePeriod(%q) = %v, want an error", in, d)
		}
	}
	if s := FormatPeriod(90 * 24 * time.Hour); s != "90d" {
		t.Errorf("FormatPeriod(90d) = %q", s)
	}
}
