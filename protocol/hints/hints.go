// Package hints says in one line what an operator can do about a
// failure: a wrong key, a registry that wants credentials, a template a
// shell emptied, a refusal a flag changes. It decides nothing; the CLI
// prints its words under an error, and serve logs them.
package hints

import (
	"crypto/x509"
	"errors"
	"regexp"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
)

// Context is what the command line said that decides a hint: the same
// failure wants a different fix with --plain-http or --username given.
type Context struct {
	PlainHTTP, Username, CAFile bool
	// Template is the template flag given, e.g. "--provider-template".
	Template string
}

// For is one line saying what to do about a failure, or "". The
// catalogue follows oci.Classify's classes, and a few failures outside the
// registry (pgp.ErrWrongKey: a signature by another key).
func For(err error, hc Context) string {
	if err == nil {
		return ""
	}
	var mp *repotemplate.MissingPlaceholderError
	if errors.As(err, &mp) && mp.Used == 0 {
		return "the template has no ${…} left: a shell replaces them (with nothing) inside double quotes; put the template in single quotes ('…/${namespace}/…')"
	}
	if h := flagHint(err); h != "" {
		return h
	}
	if errors.Is(err, pgp.ErrWrongKey) {
		return "the release was signed with another key: pass the publisher's public key with --key (`gpg --list-packets FILE.sig` shows the key ID it wants)"
	}
	if h := classHint(err, hc); h != "" {
		return h
	}
	if hc.PlainHTTP && oci.StatusCode(err) == 400 {
		// A TLS server answers a plain HTTP request with 400 ("Client sent
		// an HTTP request to an HTTPS server").
		return "the registry answered 400 to plain HTTP; it probably speaks HTTPS: drop --plain-http"
	}
	return ""
}

// classHint is the hint for err's oci.Classify class, or "".
func classHint(err error, hc Context) string {
	switch oci.Classify(err) {
	case oci.FailureUnauthorized:
		if hc.Username {
			return "the registry refused these credentials: check --username and the password (--password-stdin or OCI_TOFU_PASSWORD)"
		}
		return "the registry wants credentials: run `docker login " + registryHost(err) + "`, or pass --username with --password-stdin (or set OCI_TOFU_USERNAME and OCI_TOFU_PASSWORD)"
	case oci.FailureDenied:
		return "the registry refused this account access to the repository: check its pull/push rights, and the repository's name"
	case oci.FailureTLS:
		var hostname x509.HostnameError
		if errors.As(err, &hostname) {
			return "the registry's certificate does not name this host: use a host name it was issued for"
		}
		if hc.CAFile {
			return "the registry's certificate is not signed by the CA in --ca-file: give the CA that issued it"
		}
		return "the registry's certificate is not trusted: pass --ca-file CA.pem (or set SSL_CERT_FILE)"
	case oci.FailurePlainHTTP:
		if hc.PlainHTTP {
			return "the registry speaks HTTPS: drop --plain-http"
		}
		return "the registry speaks plain HTTP: add --plain-http (or OCI_TOFU_PLAIN_HTTP=1; for local test registries only)"
	case oci.FailureNotFound:
		if hc.Template != "" {
			return "nothing there: check the repository " + hc.Template + " names (it is expanded with the provider's or module's names), or push it first"
		}
		return "nothing there: check the repository name and tag, or push it first"
	case oci.FailureThrottled:
		return "the registry is rate-limiting: wait a little and run again (Retry-After is honoured); for `serve`, lower --registry-concurrency"
	case oci.FailureUnavailable, oci.FailureServerError:
		return "the registry is failing: try again later, or ask its operators"
	case oci.FailureTimeout:
		return "the registry did not answer in time: check the network path to it"
	case oci.FailureUnreachable:
		return "cannot connect to the registry: check the host name and port, and that it is running"
	}
	return ""
}

// requestURL finds the URL a failed request named in its message
// (oras-go writes `GET "https://host/v2/…": …`).
var requestURL = regexp.MustCompile(`"https?://([^/"]+)/`)

// registryHost is the host an error answer came from, or "HOST".
func registryHost(err error) string {
	if u := oci.ErrorURL(err); u != nil && u.Host != "" {
		return u.Host
	}
	if m := requestURL.FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return "HOST"
}

// flagHint names the flag that changes the outcome of a refusal the
// library explains without naming flags.
func flagHint(err error) string {
	switch {
	case errors.Is(err, oci.ErrVersionExists):
		return "to overwrite the version anyway, pass --replace — only if no one has installed it: lock files pin its hashes"
	case errors.Is(err, pgp.ErrNoKey):
		return "give the publisher's public key with --key, or --unsigned to push an in-house build without a signature check"
	case errors.Is(err, release.ErrNotSigned):
		return "give --sign-key to sign it (SHA256SUMS is created when missing), or --unsigned for an in-house build"
	case errors.Is(err, release.ErrMissingPlatform):
		return "use --platform to push only the platforms the directory holds"
	case errors.Is(err, pgp.ErrExpired):
		return "the key or signature expired and expiry is enforced; without --enforce-gpg-expiration (and " + pgp.EnforceExpirationEnv + ") it is accepted with a warning, as OpenTofu 1.12 does"
	case errors.Is(err, pullthrough.ErrPushRefused):
		return "give credentials allowed to push (--username with OCI_TOFU_PASSWORD or --password-stdin, or a docker config with them), or run read-only, without the --pull-through flags"
	case errors.Is(err, policy.ErrDenied):
		return "the policy (--policy) denies this version: change the policy, or pass --policy-warn to only warn while rolling it out (push and mirror; `oci-tofu policy test` explains a decision)"
	case errors.Is(err, modulepkg.ErrNoRootModule):
		return "pass --allow-no-root for a package whose modules are all in subdirectories"
	}
	return ""
}
