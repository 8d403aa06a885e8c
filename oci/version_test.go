package oci

import "testing"

func TestTagsAndVersions(t *testing.T) {
	for _, tc := range []struct{ version, tag string }{
		{"1.2.3", "1.2.3"},
		{"2.0.0-rc1", "2.0.0-rc1"},
		{"1.0.0+build.5", "1.0.0_build.5"},
		{"1.0.0-beta.1+exp.sha.5114f85", "1.0.0-beta.1_exp.sha.5114f85"},
	} {
		v, err := ParseVersion(tc.version)
		if err != nil {
			t.Fatal(err)
		}
		if got := TagForVersion(v); got != tc.tag {
			t.Errorf("TagForVersion(%s) = %s, want %s", tc.version, got, tc.tag)
		}
		back, ok := VersionFromTag(tc.tag)
		if !ok || !back.Same(v) {
			t.Errorf("VersionFromTag(%s) = %v %v", tc.tag, back, ok)
		}
	}
	for _, bad := range []string{"v1.2.3", "1.2", "latest", "01.2.3", "1.2.3.4", "", "1.0.0+a+b"} {
		if _, ok := VersionFromTag(bad); ok {
			t.Errorf("tag %q taken as a version", bad)
		}
	}
	for _, bad := range []string{"v1.2.3", "1.2", "1.02.3"} {
		if _, err := ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q) accepted", bad)
		}
	}
}

func FuzzVersionFromTag(f *testing.F) {
	for _, s := range []string{"1.2.3", "1.0.0_b", "v1", "1.0.0-rc.1_x.y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tag string) {
		v, ok := VersionFromTag(tag)
		if ok && TagForVersion(v) != tag {
			t.Fatalf("%q → %s → %q", tag, v, TagForVersion(v))
		}
	})
}

func TestParseProtocolVersion(t *testing.T) {
	for _, ok := range []string{"5.0", "6.0", "5"} {
		if _, err := ParseProtocolVersion(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "x", "0.1"} {
		if _, err := ParseProtocolVersion(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
