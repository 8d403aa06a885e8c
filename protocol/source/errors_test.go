package source_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

func TestAbsentIsDecidedByTheOutermostTypedError(t *testing.T) {
	registryNotFound := &store.Error{Failure: oci.FailureNotFound, What: "reading a blob", Err: errors.New("404")}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"not found", source.NotFoundf("no version 1.0.0"), true},
		{"denied", &source.Denied{Msg: "denied", Rule: "r"}, true},
		{"registry's not found", fmt.Errorf("reading: %w", registryNotFound), true},
		{"unservable caused by a missing blob", &source.Unservable{Msg: "SHA256SUMS unreadable", Err: registryNotFound}, false},
		{"conflict", &source.Conflict{Msg: "unsigned"}, false},
		{"other failure", &store.Error{Failure: oci.FailureTimeout, Err: errors.New("slow")}, false},
		{"nil", nil, false},
	}
	for _, c := range cases {
		if got := source.Absent(c.err); got != c.want {
			t.Errorf("%s: Absent = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestOnlyAbsentAnswersAreMarkedNotHeld(t *testing.T) {
	nf := source.Missing(&store.Error{Failure: oci.FailureNotFound, Err: errors.New("404")}, "provider x", "provider %s has no version %s", "x", "1.0.0")
	if !source.IsNotHeld(source.MarkNotHeld(nf)) {
		t.Errorf("a missing version is not marked not held")
	}
	var typed *source.NotFound
	if !errors.As(nf, &typed) || typed.Msg != "provider x has no version 1.0.0" {
		t.Errorf("not a NotFound with the formatted message: %v", nf)
	}
	denied := &source.Denied{Msg: "denied"}
	if !source.IsNotHeld(source.MarkNotHeld(denied)) {
		t.Errorf("a denial is absent, so marked as before")
	}
	failure := &store.Error{Failure: oci.FailureUnavailable, Err: errors.New("503")}
	if source.IsNotHeld(source.MarkNotHeld(failure)) {
		t.Errorf("a registry failure was marked not held: pull-through would fetch what the registry may hold")
	}
	if source.IsNotHeld(nf) {
		t.Errorf("an unmarked NotFound reads as not held")
	}
}

func TestMissingPassesOtherFailuresUnchanged(t *testing.T) {
	failure := &store.Error{Failure: oci.FailureTimeout, Err: errors.New("slow")}
	if got := source.Missing(failure, "x", "gone"); got != error(failure) {
		t.Errorf("Missing changed a timeout into %v", got)
	}
	repoGone := &store.Error{Failure: oci.FailureNotFound, RepoMissing: true, Err: errors.New("404")}
	var nf *source.NotFound
	if !errors.As(source.Missing(repoGone, "provider x", "no version"), &nf) || nf.Msg != "unknown provider x" {
		t.Errorf("a missing repository is not \"unknown provider x\": %v", nf)
	}
}
