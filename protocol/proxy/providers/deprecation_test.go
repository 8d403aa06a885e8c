package providers

import (
	"fmt"
	"slices"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// The versions document warns of at most ten deprecated versions, the
// newest listed first, then says how many more there are; a version not
// listed is not warned of.
func TestDeprecationWarnings(t *testing.T) {
	var rvs []*wire.RegistryVersion
	deprecated := map[string]string{"9.9.9": "not listed"}
	for i := range 13 {
		v := fmt.Sprintf("1.%d.0", i)
		rvs = append(rvs, &wire.RegistryVersion{Version: v})
		if i != 5 {
			deprecated[v] = "old"
		}
	}
	rvs = append(rvs, &wire.RegistryVersion{Version: "2.0.0"})
	got := deprecationWarnings("example.com/a/b", listedVersions(rvs), deprecated)
	var want []string
	for _, i := range []int{12, 11, 10, 9, 8, 7, 6, 4, 3, 2} {
		want = append(want, fmt.Sprintf("version 1.%d.0 of example.com/a/b is deprecated: old", i))
	}
	want = append(want, "…and 2 older versions of example.com/a/b are deprecated too (oci-tofu policy test says why)")
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	one := deprecationWarnings("a/b", names.VersionList{names.MustParseVersion("1.0.0")}, map[string]string{"1.0.0": "m"})
	if !slices.Equal(one, []string{"version 1.0.0 of a/b is deprecated: m"}) {
		t.Errorf("one deprecation: %q", one)
	}
	if none := deprecationWarnings("a/b", listedVersions(rvs), nil); none != nil {
		t.Errorf("no deprecation: %q", none)
	}
}
