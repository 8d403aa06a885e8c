package store

import (
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Error is a failure to read from a repository, classified for the caller
// (the proxy turns Failure into a status code). Its message says what was
// being done; Err, which may name internal hosts, is for logs.
type Error struct {
	Failure oci.Failure
	// RepoMissing is set when the repository itself does not exist (or,
	// on a DeniedAsMissing registry, may not be seen).
	RepoMissing bool
	Repo        string
	What        string
	Err         error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%s): %v", e.Repo, e.What, e.Failure, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// fail classifies err. A registry that reports missing repositories as
// denied (DeniedAsMissing) has its 401/403 answers from the repository
// itself read as NotFound; a refusal from its token service still means
// the proxy's credentials are wrong.
func (r *Repo) fail(err error, what string) error {
	var se *Error
	if errors.As(err, &se) {
		return err
	}
	f := oci.Classify(err)
	repoMissing := f == oci.FailureNotFound && (what == opening || what == listing || slices.Contains(oci.ErrorCodes(err), "NAME_UNKNOWN"))
	if r.deniedMeansMissing && (f == oci.FailureUnauthorized || f == oci.FailureDenied) && r.answeredByRegistry(err) {
		f, repoMissing = oci.FailureNotFound, true
	}
	return &Error{Failure: f, RepoMissing: repoMissing, Repo: r.name, What: what, Err: err}
}

// What the store was doing, in error messages.
const (
	opening = "opening the repository"
	listing = "listing the repository's tags"
	// listingRepositories is Held's listing of a registry's catalog.
	listingRepositories = "listing the registry's repositories"
	readingHeldIndex    = "reading the held-address index"
)

// RepoMissing reports whether err says the repository does not exist.
func RepoMissing(err error) bool {
	var se *Error
	return errors.As(err, &se) && se.RepoMissing
}

// answeredByRegistry reports whether an error answer came from the
// repository's own API (/v2/…) rather than from a token service.
func (r *Repo) answeredByRegistry(err error) bool {
	u := oci.ErrorURL(err)
	if u == nil {
		return false
	}
	return u.Host == r.ref.Registry && isRegistryAPI(u)
}

func isRegistryAPI(u *url.URL) bool {
	return len(u.Path) >= 4 && u.Path[:4] == "/v2/"
}

// FailureOf classifies any error the store returned.
func FailureOf(err error) oci.Failure {
	var se *Error
	if errors.As(err, &se) {
		return se.Failure
	}
	return oci.Classify(err)
}

// Skippable reports whether a version that failed to read can be left out
// of a listing (its tag vanished, or its artifact is not what OpenTofu
// reads) rather than failing the whole listing.
func Skippable(err error) bool {
	switch FailureOf(err) {
	case oci.FailureNotFound, oci.FailureInvalid:
		return true
	}
	return false
}
