package respond

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

func TestUpstreamErrorMapping(t *testing.T) {
	u, _ := url.Parse("https://r.example/v2/x/tags/list")
	resp := func(code int) error {
		return fmt.Errorf("listing: %w", &errcode.ErrorResponse{Method: "GET", URL: u, StatusCode: code})
	}
	for _, c := range []struct {
		err    error
		status int
	}{
		{resp(500), 502}, {resp(502), 502}, {resp(503), 503}, {resp(429), 503}, {resp(401), 502}, {resp(403), 502},
		{resp(404), 502}, // a 404 after the tag resolved means the registry lost content
		{context.DeadlineExceeded, 504},
		{fmt.Errorf("x: %w", oci.ErrInvalidArtifact), 502},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, 502},
		{errors.New("something odd"), 502},
	} {
		if he := toHTTP(c.err, 0); he.status != c.status {
			t.Errorf("%v: %+v, want %d", c.err, he, c.status)
		}
	}
}
