package repotemplate

import (
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Matching a long name of many separators against placeholders sharing a
// segment is quick: it took 1 s for a 255-character segment and two
// minutes for a 4,000-character one (each split tried was validated from
// its start again, and the same failing rest tried again for every way
// to reach it), and a registry notification may carry 1,000 names. It
// is now about quadratic in the segment's length: milliseconds for the
// 255 characters OCI names keep to, a fraction of a second for 4,000.
func TestMatchLongAmbiguousNamesIsQuick(t *testing.T) {
	for _, c := range []struct {
		tpl   string
		repo  string
		bound time.Duration
	}{
		{"reg.example/m/${namespace}-${name}-${system}", "m/" + strings.Repeat("a-", 126), 20 * time.Millisecond},
		{"reg.example/m/${namespace}-${name}-${system}", "m/" + strings.Repeat("a-", 126) + "a", 20 * time.Millisecond},
		{"reg.example/p/${namespace}-${type}", "p/" + strings.Repeat("a-", 126), 20 * time.Millisecond},
		{"reg.example/m/${namespace}-${name}-${system}", "m/" + strings.Repeat("a-", 2000), 2 * time.Second},
		{"reg.example/p/${namespace}-${type}", "p/" + strings.Repeat("a-", 2000), 2 * time.Second},
		{"reg.example/p/${namespace}/${type}", "p/" + strings.Repeat("a-", 2000), 2 * time.Second},
		{"reg.example/m/${namespace}${name}${system}", "m/" + strings.Repeat("a", 4000), 2 * time.Second},
	} {
		tpl, err := ParseTemplate(c.tpl, []string{"namespace", "name", "system", "type"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		tpl.Match(oci.Reference{Registry: "reg.example", Repository: c.repo})
		if d := time.Since(start); d > c.bound {
			t.Errorf("%s against %d characters: %v, want at most %v", c.tpl, len(c.repo), d, c.bound)
		}
	}
}
