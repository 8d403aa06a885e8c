package names_test

import (
	"strings"
	"testing"

	"github.com/apparentlymart/go-versions/versions"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

func TestConstraintsStringMatchesTofu(t *testing.T) {
	// Expected strings follow the normalisation of OpenTofu's
	// getproviders.VersionConstraintsString; the e2e lock tests check the
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
		"1.0.0+b, 1.0.0+a":       "1.0.0+a, 1.0.0+b", // equal boundaries ordered by metadata
		"~> 2, >= 2.0.0":         ">= 2.0.0, ~> 2.0",
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
		{c: ">= 2.0.0-rc1, < 2.0.0", err: "no available releases match"},
		{c: "~> 1.0", locked: "1.0.0", want: "1.0.0"},
		{c: "~> 1.0", locked: "2.0.0", err: "does not match"},
		{c: "~> 3.0", err: "no available releases match"},
		{c: "~> 1.0", locked: "1.0.5", err: "no longer available"},
		{c: "0.0.0", err: "0.0.0 is not a valid provider version"},
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
