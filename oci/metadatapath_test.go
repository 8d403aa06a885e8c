package oci

import "testing"

// Small documents go through the metadata transport, the catalog among
// them; blobs through the bulk one.
func TestMetadataPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/v2/": true, "/v2/_catalog": true, "/v2/a/b/tags/list": true, "/v2/a/manifests/1.0.0": true,
		"/v2/a/referrers/sha256:ab": true, "/v2/a/blobs/sha256:ab": false, "/v2/a/blobs/uploads/": false, "/token": false,
	} {
		if got := metadataPath(p); got != want {
			t.Errorf("metadataPath(%s) = %v, want %v", p, got, want)
		}
	}
}
