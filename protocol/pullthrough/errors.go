package pullthrough

import (
	"errors"

	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/modulesource"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// Failure classes of pull-through, for errors, logs and metrics labels.
const (
	// FailureTampered: the origin's release or file failed verification
	// (signature, SHA256SUMS, digest) and was not stored.
	FailureTampered = "tampered"
	// FailureNotFound: the origin does not offer it.
	FailureNotFound = "not_found"
	// FailureUnreachable: the origin could not be reached.
	FailureUnreachable = "unreachable"
	// FailureError: the origin answered with an error.
	FailureError = "error"
	// FailureBusy: too many releases are being pulled at once, or the
	// module fetches in progress hold their whole temporary-disk budget.
	// Not remembered: it says nothing of the release.
	FailureBusy = "busy"
	// FailureRefused: what the origin offers was refused before it was
	// stored: a download location or redirect that is not https or on a
	// host outside the allow-list, a module source on a host outside the
	// allow-list, or a module tree failing the module package checks.
	FailureRefused = "refused"
	// FailurePushed: the repository it would be stored in holds versions
	// somebody pushed (pushed.go). Not remembered: it says nothing of the
	// release.
	FailurePushed = "pushed"
)

// ErrPushRefused is returned by CheckPush when the registry refuses the
// pushes pull-through needs: give credentials allowed to push, or run
// read-only, without pull-through.
var ErrPushRefused = errors.New("pull-through needs credentials allowed to push, or a read-only proxy without pull-through")

// Error is what a request learns when pull-through cannot provide a
// release: its class, a message fit for clients (Err, which may name
// internal hosts, is for logs), and, for failures remembered or load
// refused, how many seconds to wait before asking again.
type Error struct {
	Failure    string
	Msg        string
	Err        error
	RetryAfter int
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// OriginAbsent says the origin does not offer what was asked
// (FailureNotFound): what a merged listing passes over.
func (e *Error) OriginAbsent() bool { return e.Failure == FailureNotFound }

// Classify names the class of an origin failure: FailureTampered,
// FailureNotFound, FailureUnreachable or FailureError (FailureBusy for
// the engine's own refusal).
func Classify(err error) string {
	var pe *Error
	switch {
	case errors.As(err, &pe):
		return pe.Failure
	case errors.Is(err, modulesource.ErrBusy):
		return FailureBusy
	case errors.Is(err, modulesource.ErrRefused), errors.Is(err, origin.ErrRefused):
		return FailureRefused
	case errors.Is(err, ingest.ErrVerification), errors.Is(err, ErrDigestMismatch):
		return FailureTampered
	case errors.Is(err, origin.ErrNotFound):
		return FailureNotFound
	case origin.Unreachable(err):
		return FailureUnreachable
	}
	return FailureError
}

// originError is what a request sees when the origin could not provide a
// release the registry does not hold.
func originError(host string, err error) error {
	var pe *Error
	if errors.As(err, &pe) {
		return err
	}
	failure := Classify(err)
	msg := failureMessage(host, failure)
	return &Error{Failure: failure, Msg: msg, Err: err}
}
