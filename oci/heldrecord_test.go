package oci_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

func recordingClient(t *testing.T, reg *testenv.Registry, index string, log *slog.Logger) *oci.Client {
	t.Helper()
	c, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile, HeldIndex: index, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Concurrent pushes that tag, through one client with a held-address
// index, each record their repository (up-to-date pushes too); a push
// that tags nothing (a referrer) and the index itself are not recorded.
func TestCommitRecordsInTheHeldIndex(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	index := oci.Reference{Registry: reg.Host, Repository: "acme/index"}
	client := recordingClient(t, reg, index.Name(), nil)
	var want []string
	for i := range 8 {
		want = append(want, fmt.Sprintf("acme/p%d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(want))
	for _, name := range append(slices.Clone(want), want...) { // each twice: the second up to date, or racing the first
		wg.Add(1)
		go func() {
			defer wg.Done()
			repo, err := client.Open(oci.Reference{Registry: reg.Host, Repository: name})
			if err == nil {
				_, err = oci.Push(ctx, repo, seed.SmallArtifact(t, name), oci.Tags{"1.0.0": ""}, oci.PushOptions{})
			}
			errs <- err
		}()
	}
	untagged, err := client.Open(oci.Reference{Registry: reg.Host, Repository: "acme/untagged"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.Push(ctx, untagged, seed.SmallArtifact(t, "x"), oci.Tags{}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && !errors.Is(err, oci.ErrTagMoved) { // two pushes of one tag may see each other
			t.Fatal(err)
		}
	}
	got, err := listHeld(t, client, index)
	slices.Sort(got)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("the index holds %v %v, want %v", got, err, want)
	}
}

// A repository on another registry than the index is refused before
// anything is written; an index that is no registry repository is
// refused by NewClient; a failed index write is a warning, and the push
// stands.
func TestHeldIndexRefusalsAndWarnings(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{
		Match: func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/v2/acme/index/") },
		Fault: testenv.ErrorAnswer(http.StatusForbidden, "DENIED", "denied")}}})
	var logs testenv.LockedBuffer
	client := recordingClient(t, reg, front.Host+"/acme/index", slog.New(slog.NewTextHandler(&logs, nil)))
	_, err := client.Open(oci.Reference{Registry: reg.Host, Repository: "acme/p"})
	if err == nil || !strings.Contains(err.Error(), "acme/p is on the registry "+reg.Host+", and the held-address index "+front.Host+"/acme/index (--catalog-repository) on "+front.Host) {
		t.Errorf("a repository on another registry: %v", err)
	}
	if _, err := client.Open(oci.Reference{Layout: true, Repository: t.TempDir()}); err != nil {
		t.Errorf("an OCI layout: %v", err)
	}
	for _, bad := range []string{"oci-layout:/tmp/x", front.Host + "/acme/index:v1", "https://" + front.Host + "/x"} {
		if _, err := oci.NewClient(oci.Options{HeldIndex: bad}); err == nil || !strings.Contains(err.Error(), "held-address index") {
			t.Errorf("index %q: %v", bad, err)
		}
	}
	repo, err := client.Open(oci.Reference{Registry: front.Host, Repository: "acme/p"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.Push(ctx, repo, seed.SmallArtifact(t, "p"), oci.Tags{"1.0.0": ""}, oci.PushOptions{}); err != nil {
		t.Fatalf("a push whose index write fails: %v", err)
	}
	if s := logs.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "the held-address index does not record this publish") || !strings.Contains(s, "repository="+front.Host+"/acme/p") {
		t.Errorf("no warning: %q", s)
	}
}
