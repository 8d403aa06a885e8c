package oci_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// FetchOrLocate hands out the storage URL a registry redirects a blob to
// (HTTPS, another origin) without contacting the storage, and gives a
// reader otherwise: a registry serving the blob itself, or a redirect to
// plain HTTP (followed, credentials left behind). The registry's
// credentials never reach the storage.
func TestFetchOrLocate(t *testing.T) {
	reg := testenv.StartRegistryWithAuth(t, "user", "Pa55word")
	blob := []byte("an archive's bytes\n")
	desc := ocispec.Descriptor{MediaType: "application/zip", Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	cases := []struct {
		name     string
		mode     testenv.RedirectMode
		location bool
	}{
		{"served by the registry", testenv.NoRedirect, false},
		{"redirected to another host", testenv.RedirectOtherHost, true},
		{"redirected to another port", testenv.RedirectOtherPort, true},
		{"redirected to plain HTTP", testenv.RedirectPlainHTTP, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Redirect: c.mode})
			client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile, Username: "user", Password: "Pa55word"})
			if err != nil {
				t.Fatal(err)
			}
			ref := oci.Reference{Registry: front.Host, Repository: "blobs/locate"}
			repo, err := client.Open(ref)
			if err != nil {
				t.Fatal(err)
			}
			if err := repo.Push(context.Background(), desc, bytes.NewReader(blob)); err != nil {
				t.Fatal(err)
			}
			ro, err := client.OpenReadOnly(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			loc, rc, err := oci.FetchOrLocate(context.Background(), ro, desc)
			if err != nil {
				t.Fatal(err)
			}
			if c.location {
				if rc != nil || !strings.HasPrefix(loc, front.Redirects.URL+"/") {
					t.Fatalf("location %q, reader %v; want the storage URL under %s", loc, rc != nil, front.Redirects.URL)
				}
				if n := len(front.Redirects.Requests()); n != 0 {
					t.Errorf("the storage was contacted %d times while locating", n)
				}
				return
			}
			if loc != "" || rc == nil {
				t.Fatalf("location %q, reader %v; want a reader", loc, rc != nil)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, blob) {
				t.Errorf("read %q, %v", got, err)
			}
			if front.Redirects != nil {
				if leaked := front.Redirects.WithAuthorization(); len(leaked) != 0 {
					t.Errorf("credentials reached the storage: %+v", leaked)
				}
			}
		})
	}
}
