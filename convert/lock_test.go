package convert

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apparentlymart/go-versions/versions"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func TestConstraintsStringMatchesTofu(t *testing.T) {
	// Expected strings follow the normalisation of OpenTofu's
	// getproviders.VersionConstraintsString; e2e/lock_test.go checks the
	// result against real tofu init.
	for in, want := range map[string]string{
		"~> 1.0":                 "~> 1.0",
		"~>1.2.0":                "~> 1.2.0",
		">= 1.0, < 2.0.0":        ">= 1.0.0, < 2.0.0",
		"< 2.0.0, >= 1.0":        ">= 1.0.0, < 2.0.0",
		"1.2.3":                  "1.2.3",
		"= 1.2.3, 1.2.3":         "1.2.3",
		"!= 1.5.0, >= 1.0":       ">= 1.0.0, != 1.5.0",
		"2.0.0-rc1":              "2.0.0-rc1",
		">= 1.0.0, ~> 1.0, >1.0": "> 1.0.0, >= 1.0.0, ~> 1.0",
	} {
		c, err := names.ParseConstraints(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := names.ConstraintsString(c); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestSelectVersion(t *testing.T) {
	list := versions.List{versions.MustParseVersion("1.0.0"), versions.MustParseVersion("1.1.0"), versions.MustParseVersion("2.0.0-rc1"), versions.MustParseVersion("2.0.0")}
	pick := func(c string, locked string) (string, error) {
		spec, err := names.ParseConstraints(c)
		if err != nil {
			t.Fatal(err)
		}
		var l *versions.Version
		if locked != "" {
			v := versions.MustParseVersion(locked)
			l = &v
		}
		v, err := names.SelectVersion(list, spec, l)
		return v.String(), err
	}
	for _, tc := range []struct{ c, locked, want, err string }{
		{c: "~> 1.0", want: "1.1.0"},
		{c: "", want: "2.0.0"},
		{c: "2.0.0-rc1", want: "2.0.0-rc1"},
		{c: ">= 2.0.0-rc1, < 2.0.0", err: "no available version"},
		{c: "~> 1.0", locked: "1.0.0", want: "1.0.0"},
		{c: "~> 1.0", locked: "2.0.0", err: "does not match"},
		{c: "~> 3.0", err: "no available version"},
	} {
		got, err := pick(tc.c, tc.locked)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q locked %q: want error %q, got %s %v", tc.c, tc.locked, tc.err, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q locked %q: got %s %v, want %s", tc.c, tc.locked, got, err, tc.want)
		}
	}
}

func TestRequiredProviders(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`
terraform {
  required_providers {
    aws    = { source = "hashicorp/aws", version = "~> 5.0" }
    random = "~> 3.1"
    hello  = { source = "Example.com/Test/hello" }
  }
}
resource "x" "y" { count = var.n }
`), 0o644)
	os.WriteFile(filepath.Join(dir, "versions.tofu"), []byte(`
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = ">= 5.1" }
  }
}
`), 0o644)
	// Hidden by versions.tofu, as in OpenTofu.
	os.WriteFile(filepath.Join(dir, "versions.tf"), []byte(`terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = "< 5.0" }
  }
}`), 0o644)
	reqs, err := RequiredProviders(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range reqs {
		got[r.Addr.String()] = names.ConstraintsString(r.Constraints)
	}
	want := map[string]string{
		"registry.opentofu.org/hashicorp/aws":    "~> 5.0, >= 5.1.0",
		"registry.opentofu.org/hashicorp/random": "~> 3.1",
		"example.com/test/hello":                 "",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	os.WriteFile(filepath.Join(dir, "bad.tf"), []byte(`terraform { required_providers { x = { source = 5 } } }`), 0o644)
	if _, err := RequiredProviders(dir); err == nil {
		t.Error("a non-string source was accepted")
	}
}

func TestParseProviderAddr(t *testing.T) {
	for in, want := range map[string]string{
		"aws":                          "registry.opentofu.org/hashicorp/aws",
		"Hashicorp/AWS":                "registry.opentofu.org/hashicorp/aws",
		"example.com/acme/widget":      "example.com/acme/widget",
		"localhost:8443/acme/widget":   "localhost:8443/acme/widget",
		"registry.example.com/a-b/c-d": "registry.example.com/a-b/c-d",
	} {
		a, err := names.ParseProvider(in)
		if err != nil || a.String() != want {
			t.Errorf("%s: %v %v", in, a, err)
		}
	}
	// Addresses name directories in export and repositories in templates:
	// nothing that could climb out of them.
	for _, bad := range []string{"../acme/x", "./acme/x", "a/b/c/d", "host/../x", "host/a/..", "ho st/a/x", "user@host/a/x", "host/a_b/x", "", "host//x"} {
		if a, err := names.ParseProvider(bad); err == nil {
			t.Errorf("%q accepted as %s", bad, a)
		}
	}
}
