package hints_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/hints"
)

// answer is a registry's error answer as oras-go returns it, wrapped.
func answer(code int) error {
	u, _ := url.Parse("https://reg.example:5000/v2/p/test/hello/manifests/1.0.0")
	return fmt.Errorf("verify: %w", &errcode.ErrorResponse{Method: "GET", URL: u, StatusCode: code})
}

// The same failure is worded for what the command line said; the
// registry's own host is named in the login to run. e2e/hints_test.go
// provokes each class against a real peer.
func TestForWordsTheFixForTheCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		c    hints.Context
		want string // the hint's start; "" for no hint
	}{
		{"no error", nil, hints.Context{}, ""},
		{"an error outside the catalogue", errors.New("disk full"), hints.Context{}, ""},
		{"credentials missing", answer(401), hints.Context{}, "the registry wants credentials: run `docker login reg.example:5000`"},
		{"credentials wrong", answer(401), hints.Context{Username: true}, "the registry refused these credentials"},
		{"nothing there", answer(404), hints.Context{}, "nothing there: check the repository name and tag"},
		{"nothing at the template", answer(404), hints.Context{Template: "--module-template"}, "nothing there: check the repository --module-template names"},
		{"400 to plain HTTP", answer(400), hints.Context{PlainHTTP: true}, "the registry answered 400 to plain HTTP"},
		{"400 over HTTPS", answer(400), hints.Context{}, ""},
		{"another key", fmt.Errorf("push: %w", pgp.ErrWrongKey), hints.Context{}, "the release was signed with another key"},
		{"a version that exists", fmt.Errorf("push: %w", oci.ErrVersionExists), hints.Context{}, "to overwrite the version anyway, pass --replace"},
		{"a template the shell emptied", &repotemplate.MissingPlaceholderError{Template: "ghcr.io/acme//", Missing: "type"}, hints.Context{}, "the template has no ${…} left"},
		{"a template lacking one placeholder", &repotemplate.MissingPlaceholderError{Template: "ghcr.io/acme/${type}", Missing: "namespace", Used: 1}, hints.Context{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := hints.For(tc.err, tc.c)
			if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
				t.Errorf("For = %q, want %q…", got, tc.want)
			}
			if strings.Contains(got, "\n") {
				t.Errorf("For = %q: more than one line", got)
			}
		})
	}
}
