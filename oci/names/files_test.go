package names_test

import (
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

func TestParseProviderFilename(t *testing.T) {
	cases := []struct {
		in   string
		want names.ProviderFile
		err  string
	}{
		{in: "terraform-provider-aws_5.1.0_linux_amd64.zip", want: names.ProviderFile{Kind: names.ProviderZip, Type: "aws", Version: "5.1.0", Platform: names.Platform{OS: "linux", Arch: "amd64"}}},
		{in: "terraform-provider-google-beta_1.0.0-rc.1_darwin_arm64.zip", want: names.ProviderFile{Kind: names.ProviderZip, Type: "google-beta", Version: "1.0.0-rc.1", Platform: names.Platform{OS: "darwin", Arch: "arm64"}}},
		{in: "terraform-provider-x_1.0.0+build.5_linux_amd64.zip", want: names.ProviderFile{Kind: names.ProviderZip, Type: "x", Version: "1.0.0+build.5", Platform: names.Platform{OS: "linux", Arch: "amd64"}}},
		{in: "terraform-provider-aws_5.1.0_SHA256SUMS", want: names.ProviderFile{Kind: names.ProviderSHA256SUMS, Type: "aws", Version: "5.1.0"}},
		{in: "terraform-provider-aws_5.1.0_SHA256SUMS.sig", want: names.ProviderFile{Kind: names.ProviderSignature, Type: "aws", Version: "5.1.0"}},
		{in: "terraform-provider-aws_5.1.0_SHA256SUMS.72D7468F.sig", want: names.ProviderFile{Kind: names.ProviderSignature, Type: "aws", Version: "5.1.0"}},
		{in: "terraform-provider-aws_5.1.0_manifest.json", want: names.ProviderFile{Kind: names.ProviderManifest, Type: "aws", Version: "5.1.0"}},
		{in: "terraform-provider-aws_v5.1.0_linux_amd64.zip", err: "invalid version"},
		{in: "terraform-provider-aws_5.1_linux_amd64.zip", err: "not canonical"},
		{in: "terraform-provider-aws_5.1.0_linux.zip", err: "want"},
		{in: "terraform-provider-aws_5.1.0_linux_amd_64.zip", err: "want"},
		{in: "terraform-provider-AWS_5.1.0_linux_amd64.zip", err: "invalid provider type"},
		{in: "terraform-provider-aws_5.1.0_Linux_amd64.zip", err: "invalid platform"},
		{in: "terraform-provider-_5.1.0_linux_amd64.zip", err: "invalid provider type"},
		{in: "terraform-aws_5.1.0_linux_amd64.zip", err: "not a provider release file"},
		{in: "terraform-provider-aws_5.1.0_README.md", err: "not a provider zip"},
	}
	for _, tc := range cases {
		got, err := names.ParseProviderFilename(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: want error containing %q, got %v (%+v)", tc.in, tc.err, err, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParseProviderFilename(f *testing.F) {
	f.Add("terraform-provider-aws_5.1.0_linux_amd64.zip")
	f.Add("terraform-provider-aws_5.1.0_SHA256SUMS.72D7468F.sig")
	f.Add("terraform-provider-a_1.0.0-x_y_z.zip")
	f.Fuzz(func(t *testing.T, name string) {
		pf, err := names.ParseProviderFilename(name)
		if err != nil {
			return
		}
		if !names.ValidProviderPart(pf.Type) {
			t.Fatalf("%q: accepted type %q", name, pf.Type)
		}
		v, err := names.ParseVersion(pf.Version)
		if err != nil || v.String() != pf.Version {
			t.Fatalf("%q: accepted non-canonical version %q", name, pf.Version)
		}
		if strings.ContainsAny(name, "/\\") {
			t.Fatalf("%q: accepted a path", name)
		}
		if pf.Kind == names.ProviderZip {
			if got := names.ProviderZipName(pf.Type, pf.Version, pf.Platform); got != name {
				t.Fatalf("%q: parsed to %+v which names %q", name, pf, got)
			}
		}
	})
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 versions", 1: "1 version", 2: "2 versions"} {
		if got := names.Plural(n, "version"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}
