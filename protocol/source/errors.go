// Package source is the seam between the proxy's protocol handlers and
// what they serve: what sources of providers, modules and OpenTofu
// releases answer, and the typed errors they answer with. A source never
// speaks HTTP; the proxy maps these errors to statuses in one place.
package source

import (
	"errors"
	"fmt"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// NotFound says what was asked for is not there: a client sees 404 and
// Msg. Err, which may name internal hosts, is for the log.
type NotFound struct {
	Msg string
	Err error
}

func (e *NotFound) Error() string { return withCause(e.Msg, e.Err) }
func (e *NotFound) Unwrap() error { return e.Err }

// NotFoundf is a NotFound with a formatted message and no cause.
func NotFoundf(format string, args ...any) error {
	return &NotFound{Msg: fmt.Sprintf(format, args...)}
}

// Missing turns a store error that means "not there" into a NotFound:
// "unknown <subject>" when the repository itself is missing, the
// formatted message otherwise. Other errors pass unchanged.
func Missing(err error, subject, format string, args ...any) error {
	if store.FailureOf(err) != oci.FailureNotFound {
		return err
	}
	msg := fmt.Sprintf(format, args...)
	if store.RepoMissing(err) {
		msg = "unknown " + subject
	}
	return &NotFound{Msg: msg, Err: err}
}

// Denied says the policy file or the attestation rule refuses a release
// the registry may hold: a client sees 404 and Msg, which gives Reason.
// AgesIn, when set, is when a min_age rule starts allowing it.
// Address and Version, set for a version the policy file denies (Kind
// its kind), name it for the event of the request refused.
type Denied struct {
	Msg     string
	Rule    string
	Reason  string
	AgesIn  time.Time
	Err     error
	Kind    names.Kind
	Address string
	Version string
}

// AttestationRule is the Rule of a denial by the attestation rule.
const AttestationRule = "attestation"

func (e *Denied) Error() string { return withCause(e.Msg, e.Err) }
func (e *Denied) Unwrap() error { return e.Err }

// Unservable says the registry holds content the proxy cannot serve as
// OpenTofu expects it (a client sees 502 and Msg); Err is for the log.
type Unservable struct {
	Msg string
	Err error
}

func (e *Unservable) Error() string { return withCause(e.Msg, e.Err) }
func (e *Unservable) Unwrap() error { return e.Err }

// Conflict says what was asked for contradicts what is stored (a client
// sees 409 and Msg).
type Conflict struct{ Msg string }

func (e *Conflict) Error() string { return e.Msg }

// ErrNotHeld marks an error that says the registry does not hold a
// release at all, rather than holding it incomplete, denying it or
// failing to read it: only then may pull-through fetch it from its origin.
var ErrNotHeld = errors.New("not held")

type notHeld struct{ error }

func (e notHeld) Unwrap() error        { return e.error }
func (e notHeld) Is(target error) bool { return target == ErrNotHeld }

// MarkNotHeld marks err as ErrNotHeld when it says "not there" (Absent).
func MarkNotHeld(err error) error {
	if Absent(err) {
		return notHeld{err}
	}
	return err
}

// IsNotHeld reports whether err was marked by MarkNotHeld.
func IsNotHeld(err error) bool { return errors.Is(err, ErrNotHeld) }

// Absent reports whether err says what was asked for is not to be had
// here (NotFound, Denied, or the registry's "not found"): several
// mappings pass over such an answer to the next. The outermost typed
// error decides: an Unservable caused by a missing blob is not absent.
func Absent(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch e.(type) {
		case *NotFound, *Denied:
			return true
		case *Unservable, *Conflict:
			return false
		}
	}
	return store.FailureOf(err) == oci.FailureNotFound
}

func withCause(msg string, err error) string {
	if err != nil {
		return msg + ": " + err.Error()
	}
	return msg
}
