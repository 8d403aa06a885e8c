package providers

import (
	"net/url"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

func TestParseMirrorPath(t *testing.T) {
	r, err := ParseMirrorPath("Registry.OpenTofu.org/HashiCorp/aws/5.0.0+build.1.json")
	if err != nil || r.Provider != (names.Provider{Hostname: "registry.opentofu.org", Namespace: "hashicorp", Type: "aws"}) || r.Version.String() != "5.0.0+build.1" || r.Index {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = ParseMirrorPath("localhost:8443/a/b-c/index.json")
	if err != nil || !r.Index || r.Provider.Hostname != "localhost:8443" {
		t.Fatalf("%+v %v", r, err)
	}
	g, err := ParseRegistryPath("ns/t/1.2.3/download/linux/arm64")
	if err != nil || !g.Download || g.Platform != (names.Platform{OS: "linux", Arch: "arm64"}) {
		t.Fatalf("%+v %v", g, err)
	}
	a, err := ParseArchivePath("h/ns/hello/1.0.0/" + strings.Repeat("0", 64) + "/terraform-provider-hello_1.0.0_SHA256SUMS.sig")
	if err != nil || a.File != ArchiveSignature {
		t.Fatalf("%+v %v", a, err)
	}
	if _, err := ParseArchivePath("h/ns/hello/1.0.0/" + strings.Repeat("0", 64) + "/terraform-provider-hello_1.0.0_SHA256SUMS.72D7468F.sig"); err == nil {
		t.Fatal("key-id signature names are not served")
	}
}

// FuzzParsePaths: no input makes a parser panic, and whatever parses is
// made only of validated names, so that it cannot reach outside the
// repository template or produce a path that parses differently.
func FuzzParsePaths(f *testing.F) {
	for _, s := range []string{
		"example.com/test/hello/index.json",
		"example.com/test/hello/1.0.0.json",
		"example.com/test/hello/2.0.0-rc1.json",
		"example.com/test/../index.json",
		"example.com/te%2Fst/hello/index.json",
		"ns/t/versions",
		"ns/t/1.0.0/download/linux/amd64",
		"ns/t/1.0.0/download/../amd64",
		"h/ns/hello/1.0.0/" + strings.Repeat("a", 64) + "/terraform-provider-hello_1.0.0_linux_amd64.zip",
		"h/ns/hello/1.0.0/" + strings.Repeat("a", 64) + "/terraform-provider-hello_1.0.0_SHA256SUMS",
		"h/ns/hello/1.0.0+x/" + strings.Repeat("a", 64) + "/terraform-provider-hello_1.0.0+x_SHA256SUMS.sig",
		"%00/%ff/%/x",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		check := func(p names.Provider) {
			if _, err := respond.ParseHostname(p.Hostname); err != nil {
				t.Fatalf("%q: hostname %q", s, p.Hostname)
			}
			for _, n := range []string{p.Namespace, p.Type} {
				if !names.ValidProviderPart(n) || strings.ContainsAny(n, "/.\\:@") {
					t.Fatalf("%q: name %q", s, n)
				}
			}
		}
		if r, err := ParseMirrorPath(s); err == nil {
			check(r.Provider)
			if !r.Index {
				if _, err := names.ParseVersion(r.Version.String()); err != nil {
					t.Fatalf("%q: version %v", s, r.Version)
				}
				again, err := ParseMirrorPath(url.PathEscape(r.Provider.Hostname) + "/" + r.Provider.Namespace + "/" + r.Provider.Type + "/" + url.PathEscape(r.Version.String()) + ".json")
				if err != nil || again.Provider != r.Provider || again.Version.String() != r.Version.String() {
					t.Fatalf("%q: round trip %+v %v", s, again, err)
				}
			}
		}
		if r, err := ParseRegistryPath(s); err == nil {
			check(names.Provider{Hostname: "h", Namespace: r.Namespace, Type: r.Type})
			if r.Download {
				if _, err := names.ParsePlatform(r.Platform.String()); err != nil {
					t.Fatalf("%q: platform %v", s, r.Platform)
				}
			}
		}
		if r, err := ParseArchivePath(s); err == nil {
			check(r.Provider)
			if r.Index.Validate() != nil {
				t.Fatalf("%q: digest %v", s, r.Index)
			}
			var file string
			switch r.File {
			case ArchiveZip:
				file = names.ProviderZipName(r.Provider.Type, r.Version.String(), r.Platform)
			case ArchiveSHA256SUMS:
				file = names.ProviderSHA256SUMSName(r.Provider.Type, r.Version.String())
			case ArchiveSignature:
				file = names.ProviderSHA256SUMSName(r.Provider.Type, r.Version.String()) + ".sig"
			default:
				t.Fatalf("%q: file kind %d", s, r.File)
			}
			again, err := ParseArchivePath(archivePath(r.Provider, r.Version, r.Index, file))
			if err != nil || again != r {
				t.Fatalf("%q: round trip %+v %v", s, again, err)
			}
		}
		u, err := url.Parse("https://x/v1/mirror/" + s)
		if err == nil {
			_ = respond.CheckRawPath(u)
		}
	})
}
