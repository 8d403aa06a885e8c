package attach

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// probeSubject is a digest nothing refers to, asked about to learn
// whether a registry has the referrers API.
var probeSubject = digest.FromString("oci-tofu: does this registry have the referrers API?")

// ProbeReferrers learns whether a registry repository has the OCI 1.1
// referrers API — one request, a listing for a digest nothing refers to —
// and tells oras-go, so that later reads of referrers through this
// repository object (ReadReferrers) go straight to the API or to the
// referrers tag schema. Without it, the first read on a registry that
// lacks the API waits for the API's 404 before asking for the tag. It
// decides as oras-go does: a 200 with an image index says yes; a 404
// that does not say the repository is unknown, or a 200 with anything
// else, says no; other answers (and OCI layouts) leave it to be learnt on
// the first read. The caller starts it beside its first reads and gives
// it a deadline.
func ProbeReferrers(ctx context.Context, repo oci.ReadOnlyRepository) {
	r, ok := repo.(*remote.Repository)
	if !ok {
		return
	}
	scheme := "https"
	if r.PlainHTTP {
		scheme = "http"
	}
	u := scheme + "://" + r.Reference.Host() + "/v2/" + r.Reference.Repository + "/referrers/" + probeSubject.String()
	req, err := http.NewRequestWithContext(auth.AppendRepositoryScope(ctx, r.Reference, auth.ActionPull), http.MethodGet, u, nil)
	if err != nil {
		return
	}
	req.Header.Set("Accept", ocispec.MediaTypeImageIndex)
	resp, err := r.Client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusOK:
		_ = r.SetReferrersCapability(ct == ocispec.MediaTypeImageIndex)
	case resp.StatusCode == http.StatusNotFound && !nameUnknown(body):
		_ = r.SetReferrersCapability(false)
	}
}

// nameUnknown reports whether an error document says the repository is
// unknown (then the 404 says nothing about the API).
func nameUnknown(body []byte) bool {
	var doc struct {
		Errors []struct {
			Code string `json:"code"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return false
	}
	for _, e := range doc.Errors {
		if e.Code == "NAME_UNKNOWN" {
			return true
		}
	}
	return false
}
