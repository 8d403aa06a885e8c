package names_test

import (
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

func TestTagsAndVersions(t *testing.T) {
	for _, tc := range []struct{ version, tag string }{
		{"1.2.3", "1.2.3"},
		{"2.0.0-rc1", "2.0.0-rc1"},
		{"1.0.0+build.5", "1.0.0_build.5"},
		{"1.0.0-beta.1+exp.sha.5114f85", "1.0.0-beta.1_exp.sha.5114f85"},
	} {
		v, err := names.ParseVersion(tc.version)
		if err != nil {
			t.Fatal(err)
		}
		if got := names.TagForVersion(v); got != tc.tag {
			t.Errorf("TagForVersion(%s) = %s, want %s", tc.version, got, tc.tag)
		}
		back, ok := names.VersionFromTag(tc.tag)
		if !ok || !back.Same(v) {
			t.Errorf("VersionFromTag(%s) = %v %v", tc.tag, back, ok)
		}
	}
	for _, bad := range []string{"v1.2.3", "1.2", "latest", "01.2.3", "1.2.3.4", "", "1.0.0+a+b"} {
		if _, ok := names.VersionFromTag(bad); ok {
			t.Errorf("tag %q taken as a version", bad)
		}
	}
	for _, bad := range []string{"v1.2.3", "1.2", "1.02.3"} {
		if _, err := names.ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q) accepted", bad)
		}
	}
}

// OpenTofu's oci_mirror lists tags leniently: "1.2" is version 1.2.0 (whose
// tag it then fails to resolve), "v1.2.3" and "latest" are nothing.
func TestListedVersion(t *testing.T) {
	for tag, want := range map[string]string{"1.2": "1.2.0", "1.2.3": "1.2.3", "1.0.0_b": "1.0.0+b", "2": "2.0.0"} {
		v, ok := names.ListedVersion(tag)
		if !ok || v.String() != want {
			t.Errorf("ListedVersion(%q) = %v %v, want %s", tag, v, ok, want)
		}
	}
	for _, tag := range []string{"v1.2.3", "latest", "", "sha256-abc"} {
		if v, ok := names.ListedVersion(tag); ok {
			t.Errorf("ListedVersion(%q) = %v", tag, v)
		}
	}
	if names.CanonicalTag("1.2") || !names.CanonicalTag("1.2.0") {
		t.Error("CanonicalTag")
	}
}

// go-versions panics on numbers beyond 64 bits; none of our parsers may.
func TestHugeNumbersAreErrorsNotPanics(t *testing.T) {
	huge := []string{"99999999999999999999999.0.0", "1.99999999999999999999.0", "1.0.18446744073709551616", "1.0.0-rc.99999999999999999999999"}
	for _, s := range huge {
		if _, err := names.ParseVersion(s); err == nil && s != huge[3] {
			t.Errorf("ParseVersion(%q) accepted", s)
		}
		names.VersionFromTag(s)
		names.ListedVersion(s)
		names.ParseProtocolVersion(s)
		if _, err := names.ParseConstraints(">= " + s); err == nil && s != huge[3] {
			t.Errorf("ParseConstraints(>= %s) accepted", s)
		}
		names.ParseProviderFilename("terraform-provider-x_" + s + "_linux_amd64.zip")
	}
	if _, err := names.ParseVersion("18446744073709551615.0.0"); err != nil {
		t.Errorf("the largest uint64 is a valid major version: %v", err)
	}
}

func FuzzVersionFromTag(f *testing.F) {
	for _, s := range []string{"1.2.3", "1.0.0_b", "v1", "1.0.0-rc.1_x.y", "99999999999999999999999.0.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tag string) {
		v, ok := names.VersionFromTag(tag)
		if ok && names.TagForVersion(v) != tag {
			t.Fatalf("%q → %s → %q", tag, v, names.TagForVersion(v))
		}
		if lv, ok := names.ListedVersion(tag); ok && names.CanonicalTag(tag) != (names.TagForVersion(lv) == tag) {
			t.Fatalf("%q: CanonicalTag disagrees with ListedVersion", tag)
		}
	})
}

func FuzzParseConstraints(f *testing.F) {
	for _, s := range []string{"~> 1.0", ">= 1.0, < 2.0.0", "!= 1.5.0", "1.2.3", ">= 99999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := names.ParseConstraints(s)
		if err != nil {
			return
		}
		names.ConstraintsString(c)
	})
}

func TestParseProtocolVersion(t *testing.T) {
	for _, ok := range []string{"5.0", "6.0", "5"} {
		if _, err := names.ParseProtocolVersion(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "x", "0.1"} {
		if _, err := names.ParseProtocolVersion(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
