package page

import (
	"fmt"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// The record of what was served stays bounded however many providers and
// versions clients ask for, keeping the most recent providers and the
// newest versions.
func TestSeenIsBounded(t *testing.T) {
	s := newSeen()
	var vs names.VersionList
	for i := 0; i < 3*maxSeenVersions; i++ {
		v, _ := names.ParseVersion(fmt.Sprintf("1.%d.0", i))
		vs = append(vs, v)
	}
	for i := 0; i < 2*maxSeenArtifacts; i++ {
		s.ProviderListed(fmt.Sprintf("example.com/acme/p%d", i), names.ViaMirror.String(), vs)
	}
	v := s.view()
	if len(v.Providers) != maxSeenArtifacts {
		t.Fatalf("%d providers kept, want %d", len(v.Providers), maxSeenArtifacts)
	}
	for _, p := range v.Providers {
		if len(p.Versions) != maxSeenVersions {
			t.Fatalf("%s: %d versions kept", p.Address, len(p.Versions))
		}
		if got := p.Versions[0].Version.String(); got != fmt.Sprintf("1.%d.0", 3*maxSeenVersions-1) {
			t.Fatalf("%s: newest kept is %s", p.Address, got)
		}
	}
	s.UpstreamFailure("unauthorized", "the OCI registry denied the proxy access")
	if v := s.view(); v.Failures != 1 || v.Failure == nil || v.Failure.Class != "unauthorized" {
		t.Errorf("failure: %+v", v.Failure)
	}
}
