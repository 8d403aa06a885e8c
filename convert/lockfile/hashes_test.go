package lockfile

import (
	"slices"
	"testing"
)

// The rules of OpenTofu's signatureAuthentication.acceptableHashes.
func TestSignedZipHashes(t *testing.T) {
	a := "205bd89bf88b21290256dfb66ea995733af1f7419dd577b45a26bdc817d20fdc"
	b := "D7DCC9D8A3404BAF3F418236A080CAAA3B567F850C8EE0B2986220AE0F7EB5C1"
	for _, tc := range []struct {
		doc     string
		want    []string
		wantErr bool
	}{
		{doc: a + "  x_linux_amd64.zip\n" + b + "  x_manifest.json\n", want: []string{"zh:" + a, "zh:d7dcc9d8a3404baf3f418236a080caaa3b567f850c8ee0b2986220ae0f7eb5c1"}},
		{doc: a + "  name with spaces.zip\n", want: []string{"zh:" + a}},
		{doc: a + "\n"},
		{doc: "xyz  file\n"},
		{doc: a[:63] + "g  file\n"},
		{doc: a + "  a\n\n" + a + "  b\n", wantErr: true},
		{doc: ""},
	} {
		got, err := signedZipHashes([]byte(tc.doc))
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %v %v, want %v (error %v)", tc.doc, got, err, tc.want, tc.wantErr)
		}
	}
}

func FuzzSignedZipHashes(f *testing.F) {
	f.Add([]byte("205bd89bf88b21290256dfb66ea995733af1f7419dd577b45a26bdc817d20fdc  a.zip\n"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		signedZipHashes(doc)
	})
}
