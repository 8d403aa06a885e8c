package modulepkg

import (
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
)

// A zip given as the source is attested by its sha256, a directory by
// its tree digest.
func TestPredicateSource(t *testing.T) {
	zd, tree, manifest := digest.FromString("zip"), digest.FromString("tree"), digest.FromString("manifest")
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	p := (&Package{Source: "m.zip", How: Checked, Digest: zd, Size: 3, Files: 1}).Predicate("r", []string{"1.0.0"}, manifest, at, "v")
	if p.Source != (SourcePredicate{Kind: "zip", Path: "m.zip", ZipSHA256: zd.Encoded()}) || p.Package.Digest != zd.String() || p.Manifest != manifest.String() || p.AttestedAt != "2025-01-02T02:04:05Z" {
		t.Errorf("zip: %+v", p)
	}
	for _, how := range []How{Packed, Unchanged} {
		p = (&Package{Source: "dir", How: how, Digest: zd, Tree: tree}).Predicate("r", nil, manifest, at, "v")
		if p.Source != (SourcePredicate{Kind: "directory", Path: "dir", TreeDigest: tree.String()}) {
			t.Errorf("%s: %+v", how, p.Source)
		}
	}
}
