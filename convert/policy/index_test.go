package policy

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// The index decides as the plain reading of "the first matching rule in
// the file" does: exact and wildcard rules interleaved in every order,
// repeated patterns, each kind.
func TestIndexKeepsFileOrder(t *testing.T) {
	for _, c := range []struct {
		name, src, addr, rule string
	}{
		{"wildcard before exact", `provider "a.io/x/*" { name = "w" }` + "\n" + `provider "a.io/x/y" { name = "e" }`, "a.io/x/y", "w"},
		{"exact before wildcard", `provider "a.io/x/y" { name = "e" }` + "\n" + `provider "a.io/x/*" { name = "w" }`, "a.io/x/y", "e"},
		{"repeated exact", `provider "a.io/x/y" { name = "one" }` + "\n" + `provider "a.io/x/y" { name = "two" }`, "a.io/x/y", "one"},
		{"other kind first", `module "a.io/x/y/z" { name = "m" }` + "\n" + `provider "a.io/x/y" { name = "p" }`, "a.io/x/y", "p"},
		{"case", `provider "a.io/x/y" { name = "e" }`, "A.io/X/y", "e"},
		{"none", `provider "a.io/x/y" { name = "e" }`, "a.io/x/z", DefaultRule},
	} {
		p, err := Parse([]byte(c.src), "p.hcl")
		if err != nil {
			t.Fatal(err)
		}
		if d := p.Decide(names.KindProvider, c.addr, "1.0.0"); d.Rule != c.rule {
			t.Errorf("%s: rule %q, want %q", c.name, d.Rule, c.rule)
		}
	}
}

// Random policies of exact and wildcard provider and module rules:
// the index and the scan find the same rule for every address.
func TestIndexAgreesWithScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seg := func() string { return []string{"a", "b", "c", "*"}[r.IntN(4)] }
	lit := func() string { return []string{"a", "b", "c", "d"}[r.IntN(4)] }
	for round := 0; round < 200; round++ {
		var b strings.Builder
		for i := 0; i < 1+r.IntN(40); i++ {
			switch r.IntN(3) {
			case 0:
				host, ns, typ := "h"+lit()+".io", seg(), seg()
				if ns == "*" && typ != "*" {
					ns = lit()
				}
				fmt.Fprintf(&b, "provider %q { name = \"p%d\" }\n", host+"/"+ns+"/"+typ, i)
			case 1:
				fmt.Fprintf(&b, "module %q { name = \"m%d\" }\n", "h"+lit()+".io/"+seg()+"/"+seg()+"/"+seg(), i)
			default:
				fmt.Fprintf(&b, "tofu { name = \"t%d\" }\n", i)
			}
		}
		p, err := Parse([]byte(b.String()), "p.hcl")
		if err != nil {
			t.Fatalf("%v\n%s", err, b.String())
		}
		for k := 0; k < 50; k++ {
			addrs := map[names.Kind]string{
				names.KindProvider: "h" + lit() + ".io/" + lit() + "/" + lit(),
				names.KindModule:   "h" + lit() + ".io/" + lit() + "/" + lit() + "/" + lit(),
				names.KindTofu:     "tofu",
			}
			for kind, addr := range addrs {
				if got, want := p.index.first(p.rules, kind, addr), scan(p.rules, kind, addr); got != want {
					t.Fatalf("%s %s: index %d, scan %d, in\n%s", kind, addr, got, want, b.String())
				}
			}
		}
	}
}
