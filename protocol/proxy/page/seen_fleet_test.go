package page

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// A replica's record fits a shared record however much it served, the
// most recently served kept; it reads back as it was written.
func TestFleetRecordIsBounded(t *testing.T) {
	s := newSeen()
	var vs names.VersionList
	for i := range maxSeenVersions {
		vs = append(vs, mustVersion(t, fmt.Sprintf("1.%d.0", i)))
	}
	var platforms []names.Platform
	for _, p := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64", "freebsd_amd64"} {
		pl, _ := names.ParsePlatform(p)
		platforms = append(platforms, pl)
	}
	for i := range maxSeenArtifacts {
		addr := fmt.Sprintf("registry.example.com/namespace-%03d/provider-type-%03d", i, i)
		for _, v := range vs {
			s.ProviderVersion(addr, names.ViaMirror.String(), v, platforms, true)
		}
	}
	b, err := encodeFleetRecord(s.view())
	if err != nil || len(b) > fleetRecordBytes {
		t.Fatalf("record of %d bytes (%v), bound %d", len(b), err, fleetRecordBytes)
	}
	v, err := readFleetRecord(b, time.Now())
	if err != nil || len(v.Providers) == 0 || len(v.Providers) >= maxSeenArtifacts {
		t.Fatalf("read back %d providers (%v): want fewer than %d, the most recent", len(v.Providers), err, maxSeenArtifacts)
	}
	last := fmt.Sprintf("registry.example.com/namespace-%03d/provider-type-%03d", maxSeenArtifacts-1, maxSeenArtifacts-1)
	found := false
	for _, p := range v.Providers {
		found = found || p.Address == last
		if len(p.Versions) != maxSeenVersions || len(p.Versions[0].Platforms) != len(platforms) || p.Versions[0].Signed != "yes" {
			t.Fatalf("%s read back as %+v", p.Address, p)
		}
	}
	if !found {
		t.Errorf("the most recently served provider %s was left out", last)
	}
}

// Merging joins what each replica saw of an address and keeps the
// bounds.
func TestMergeSeen(t *testing.T) {
	a, b := newSeen(), newSeen()
	pl, _ := names.ParsePlatform("linux_amd64")
	a.ProviderListed("example.com/acme/x", names.ViaMirror.String(), names.VersionList{mustVersion(t, "1.0.0"), mustVersion(t, "2.0.0")})
	b.ProviderVersion("example.com/acme/x", names.ViaRegistry.String(), mustVersion(t, "1.0.0"), []names.Platform{pl}, true)
	b.TofuListed([]string{"1.9.0", "1.8.0"})
	a.TofuListed([]string{"1.10.0"})
	b.UpstreamFailure("timeout", "late")
	m := mergeSeen(a.view(), []seenView{b.view()})
	if len(m.Providers) != 1 {
		t.Fatalf("providers: %+v", m.Providers)
	}
	x := m.Providers[0]
	if strings.Join(x.Via, ",") != "network mirror,registry protocol" || len(x.Versions) != 2 ||
		x.Versions[0].Version.String() != "2.0.0" || x.Versions[1].Signed != "yes" || len(x.Versions[1].Platforms) != 1 {
		t.Errorf("merged provider: %+v", x)
	}
	if strings.Join(m.Tofu, ",") != "1.10.0,1.9.0,1.8.0" || m.Failures != 1 || m.Failure.What != "late" {
		t.Errorf("merged: tofu %v, failures %d %+v", m.Tofu, m.Failures, m.Failure)
	}
}

func mustVersion(t testing.TB, s string) names.Version {
	t.Helper()
	v, err := names.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
