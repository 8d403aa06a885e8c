package assistant

import (
	"regexp"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// safePath is a catalogue path of plain segments: no query, fragment,
// escape, dot segment or white space can reach the catalogue's router.
var safePath = regexp.MustCompile(`^(modules|providers)(/[a-z0-9][a-z0-9._:\[\]+-]*)+$`)

// Hostile addresses are refused, or name a catalogue path of plain
// segments: none reaches another page than the address asked.
func TestAddressAttackPaths(t *testing.T) {
	for _, id := range []string{
		"../acme/vpc/aws", "example.com/../vpc/aws", "example.com/acme/../aws", "example.com/acme/vpc/..",
		"example.com/acme/vpc/aws/..", "example.com/acme/vpc/aws/1.0.0%2f..", "example.com%2f..%2fx/acme/vpc/aws",
		"example.com/acme%2fothers/vpc/aws", "example.com/acme/vpc/aws?x=1", "example.com/acme/vpc/aws#x",
		"example.com/acme/vpc/aws/1.0.0?format=html", "example.com/acme/vpc/aws/1.0.0#", "example.com/acme\n/vpc/aws",
		"example.com/acme/vpc\t/aws", "exаmple.com/acme/vpc/aws", "example.com/ａcme/vpc/aws", "example.com./acme/vpc/aws",
		"user@example.com/acme/vpc/aws", "example.com:99999/acme/vpc/aws", "[::1]/acme/vpc/aws", "./acme/vpc/aws",
		"example.com/acme/vpc/aws/1.0.0+build/x", "example.com/acme/vpc/aws/1.0.0-rc.1+..", " example.com/acme/vpc/aws ",
		"example.com//acme/vpc/aws", "example.com/acme/vpc/aws/", "example.com/acme/vpc/aws/ 1.0.0", "EXAMPLE.COM/Acme/VPC/AWS",
	} {
		m, err := parseModuleID(id, "", "own.example")
		if err == nil && !safePath.MatchString(m.path()) {
			t.Errorf("module_id %q: catalogue path %q", id, m.path())
		}
		for _, v := range []string{"1.0.0/../../x", "1.0.0?x=1", "1.0.0#x", "..", "1.0.0\n", "1.0.0%2f"} {
			m, err := parseModuleID(id, v, "own.example")
			if err == nil && !safePath.MatchString(m.path()) {
				t.Errorf("module_id %q version %q: catalogue path %q", id, v, m.path())
			}
		}
	}
	for _, a := range []string{
		"../aws", "hashicorp/..", "hashicorp/aws/..", "hashicorp/aws?x", "hashicorp/aws#x", "hashicorp%2faws/x",
		"example.com/hashicorp/aws/1.0.0", "exаmple.com/hashicorp/aws", "hashicorp/aws\n", "//hashicorp/aws",
		"user@example.com/hashicorp/aws", "example.com:0/hashicorp/aws", "HashiCorp/AWS",
	} {
		for _, v := range []string{"", "1.0.0", "1.0.0/../x", "1.0.0?x", ".."} {
			p, ver, err := parseProvider(a, v)
			if err == nil && !safePath.MatchString(providerPath(p, ver)) {
				t.Errorf("provider %q version %q: catalogue path %q", a, v, providerPath(p, ver))
			}
		}
	}
	if _, err := names.ParseVersion("1.0.0/.."); err == nil {
		t.Errorf("a version with a slash parses")
	}
}
