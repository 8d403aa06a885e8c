package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// BenchmarkDecide is one decision with 1,000 rules, the deciding one
// last, through the index and by the plain scan: 999 exact rules before
// it, or 999 wildcard rules of other namespaces (make bench measures the
// proxy's answers; this shows where the time goes).
func BenchmarkDecide(b *testing.B) {
	for _, c := range []struct{ name, line string }{
		{"exact", `provider "registry.opentofu.org/other/p%d" {}`},
		{"wildcards", `provider "localhost/ns%d/*" {}`},
	} {
		var sb strings.Builder
		for i := 0; i < 999; i++ {
			fmt.Fprintf(&sb, c.line+"\n", i)
		}
		sb.WriteString("provider \"localhost/acme/*\" {\n  versions = \">= 0.1\"\n  deny = [\"9.9.9\"]\n}\n")
		p, err := Parse([]byte(sb.String()), "p.hcl")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"-index", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if !p.Decide(names.KindProvider, "localhost/acme/big1", "1.2.3").Allow {
					b.Fatal("denied")
				}
			}
		})
		b.Run(c.name+"-scan", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if scan(p.rules, names.KindProvider, "localhost/acme/big1") != 999 {
					b.Fatal("wrong rule")
				}
			}
		})
	}
}
