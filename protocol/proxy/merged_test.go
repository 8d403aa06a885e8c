package proxy

import (
	"bytes"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Two mappings covering one provider are merged as OpenTofu merges
// oci_mirror blocks: every version of both; each version and platform
// from the first mapping holding it. Here the first holds 1.0.0 (the
// fixture's four platforms), the second another 1.0.0 (linux_amd64 with
// other bytes, and freebsd_amd64) and 1.1.0.
func TestMergedMappings(t *testing.T) {
	dirA, openA := layoutStore(t)
	dirB, openB := layoutStore(t)
	push(t, openA("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	other := []byte("PK other linux build")
	freebsd := []byte("PK freebsd build")
	push(t, openB("test", "hello"), thirdPartyArtifact(t, map[names.Platform][]byte{
		{OS: "linux", Arch: "amd64"}: other, {OS: "freebsd", Arch: "amd64"}: freebsd,
	}), "1.0.0")
	push(t, openB("test", "hello"), releaseArtifact(t, "1.1.0"), "1.1.0")
	mappings := append(mustMapping(t, "oci-layout:"+dirA+"/${namespace}/${type}"), mustMapping(t, "oci-layout:"+dirB+"/${namespace}/${type}")...)
	mappings[1].Label = "second"
	p := startProxy(t, Options{ProviderMappings: mappings, RegistryHostname: "example.com"})

	var idx wire.MirrorIndex
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if _, a := idx.Versions["1.0.0"]; !a || len(idx.Versions) != 2 {
		t.Fatalf("index.json: %v, want 1.0.0 and 1.1.0", idx.Versions)
	}
	var mv networkMirrorVersion
	r := p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &mv)
	if len(mv.Archives) != 5 {
		t.Fatalf("1.0.0.json: %d archives, want the first mapping's four and the second's freebsd_amd64", len(mv.Archives))
	}
	if got := p.get(t, resolve(t, r.URL, mv.Archives["linux_amd64"].URL)); !bytes.Equal(got.Body, fixtureZip(t, "1.0.0", "linux_amd64")) {
		t.Error("linux_amd64 of 1.0.0 is not the first mapping's")
	}
	if got := p.get(t, resolve(t, r.URL, mv.Archives["freebsd_amd64"].URL)); !bytes.Equal(got.Body, freebsd) {
		t.Errorf("freebsd_amd64 of 1.0.0 (the second mapping's alone): %d %q", got.Status, got.Body)
	}
	var mv110 networkMirrorVersion
	r = p.getJSON(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 200, &mv110)
	if got := p.get(t, resolve(t, r.URL, mv110.Archives["linux_amd64"].URL)); !bytes.Equal(got.Body, fixtureZip(t, "1.1.0", "linux_amd64")) {
		t.Errorf("1.1.0 from the second mapping: %d", got.Status)
	}
	var vd wire.RegistryVersions
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	platforms := map[string]int{}
	for _, v := range vd.Versions {
		platforms[v.Version] = len(v.Platforms)
	}
	// The second mapping's 1.0.0 is unsigned: the registry protocol
	// cannot offer it (its versions document lists only signed versions
	// when it has some), so its freebsd_amd64 is not added here.
	if platforms["1.0.0"] != 4 || platforms["1.1.0"] != 4 {
		t.Errorf("versions document: platforms per version %v, want 1.0.0: 4, 1.1.0: 4", platforms)
	}
	var dd wire.RegistryDownload
	p.getJSON(t, "/v1/providers/test/hello/1.0.0/download/linux/amd64", 200, &dd)
	if dd.SHASum != sha256Hex(fixtureZip(t, "1.0.0", "linux_amd64")) {
		t.Errorf("download document of 1.0.0 linux_amd64: shasum %s, want the first mapping's", dd.SHASum)
	}
	p.wantError(t, "/v1/mirror/example.com/test/hello/2.0.0.json", 404, "")
}

// One mapping covering the address: served as before (the merged view
// changes nothing), and mappings that cover nothing still say why.
func TestMergedMappingsFilters(t *testing.T) {
	dirA, openA := layoutStore(t)
	dirB, openB := layoutStore(t)
	push(t, openA("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	push(t, openB("acme", "hello"), releaseArtifact(t, "1.1.0"), "1.1.0")
	a := mustMapping(t, "oci-layout:"+dirA+"/${namespace}/${type}")
	a[0].Include = []string{"example.com/test/*"}
	b := mustMapping(t, "oci-layout:"+dirB+"/${namespace}/${type}")
	b[0].Exclude = []string{"example.com/test/*"}
	ms, err := store.CheckMappings(append(a, b...))
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, Options{ProviderMappings: ms})
	var idx wire.MirrorIndex
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if _, ok := idx.Versions["1.0.0"]; !ok || len(idx.Versions) != 1 {
		t.Errorf("test/hello: %v, want the first mapping's 1.0.0 alone", idx.Versions)
	}
	var acme wire.MirrorIndex
	p.getJSON(t, "/v1/mirror/example.com/acme/hello/index.json", 200, &acme)
	if _, ok := acme.Versions["1.1.0"]; !ok || len(acme.Versions) != 1 {
		t.Errorf("acme/hello: %v, want the second mapping's 1.1.0 alone", acme.Versions)
	}
	p.wantError(t, "/v1/mirror/example.com/other/hello/index.json", 404, "")
}
