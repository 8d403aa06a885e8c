package versionindex

import (
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// FuzzParse: no version index a registry sends makes the parser panic;
// what it accepts has at most MaxEntries entries of canonical versions,
// each with valid platforms, and encodes back to an index that parses
// to the same entries.
func FuzzParse(f *testing.F) {
	good, _, _ := Encode(entries(3, 2))
	f.Add(good.Bytes)
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","artifactType":"application/vnd.oci-tofu.versions.v1","manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","size":1,"annotations":{"vnd.oci-tofu.versions.version":"1.0.0","vnd.oci-tofu.versions.platforms":"linux_amd64","vnd.oci-tofu.provider.protocols":""}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		idx, err := Parse(b)
		if err != nil {
			return
		}
		if len(idx.Entries) > MaxEntries {
			t.Fatalf("%d entries", len(idx.Entries))
		}
		for k, e := range idx.Entries {
			if e.Version.String() != k || names.TagForVersion(e.Version) == "" {
				t.Fatalf("entry %q is version %s", k, e.Version)
			}
			for _, p := range e.Platforms {
				if q, err := names.ParsePlatform(p.String()); err != nil || q != p {
					t.Fatalf("platform %+v", p)
				}
			}
		}
		m, _, err := Encode(idx.Entries)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(m.Bytes)
		if err != nil {
			t.Fatalf("its own encoding is refused: %v", err)
		}
		for k, e := range idx.Entries {
			if !again.Entries[k].Equal(e) {
				t.Fatalf("%s changed: %+v, then %+v", k, e, again.Entries[k])
			}
		}
	})
}
