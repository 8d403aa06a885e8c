package cliemit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/events/webhook"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
)

// subscriptionsFile is a file of one subscription to url (its path
// holding a token that must never be printed).
func subscriptionsFile(t *testing.T, url string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "events.yaml")
	body := fmt.Sprintf("subscriptions:\n- name: hook\n  url: %s/secret-token-path\n  secrets: [%s]\n", url, webhook.NewSecret())
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// Without a file there is no Sender, and a nil one sends nothing.
func TestOpenWithoutFile(t *testing.T) {
	s, err := Open(Options{})
	if s != nil || err != nil {
		t.Fatalf("Open without a file: %v, %v", s, err)
	}
	s.Emit(events.AuditLost{Count: 1})
	s.Mirrored(nil)
	s.Pruned(nil)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if From(context.Background()) != nil {
		t.Fatal("From a bare context is not nil")
	}
}

// A file that does not load and a source that is no URI are errors
// before anything is sent.
func TestOpenRefuses(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "events.yaml")
	os.WriteFile(bad, []byte("subscriptions: [{name: x}]\n"), 0o600)
	if _, err := Open(Options{File: bad}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a bad file: %v", err)
	}
	good := subscriptionsFile(t, "http://127.0.0.1:1")
	for _, src := range []string{"has space", "new\nline", strings.Repeat("a", 1025)} {
		if _, err := Open(Options{File: good, Source: src}); err == nil {
			t.Errorf("source %q taken", src)
		}
	}
}

// An endpoint that never answers holds Close no longer than its
// timeout; what was not delivered is told on stderr, naming the
// subscription and the endpoint's host but not its path.
func TestCloseIsBounded(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	var stderr bytes.Buffer
	s, err := Open(Options{File: subscriptionsFile(t, srv.URL), Stderr: &stderr, Timeout: 300 * time.Millisecond,
		Webhook: webhook.Options{Attempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := NewContext(context.Background(), s)
	From(ctx).Emit(events.VersionPruned{Address: "registry.opentofu.org/acme/aws", Version: "1.0.0"})
	start := time.Now()
	err = s.Close(ctx)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("Close took %s with a 300ms timeout", took)
	}
	out := stderr.String()
	t.Logf("stderr:\n%s", out)
	if err == nil || !strings.Contains(out, "gave up waiting") || !strings.Contains(out, "subscription=hook") ||
		!strings.Contains(out, "the registry was changed all the same") || strings.Contains(out, "secret-token-path") {
		t.Fatalf("Close: %v; stderr:\n%s", err, out)
	}
}

// collecting is an endpoint answering 204 that keeps the subjects of the
// events it receives.
func collecting(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var subjects []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e struct {
			Subject string `json:"subject"`
		}
		json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&e)
		mu.Lock()
		subjects = append(subjects, e.Subject)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(slices.Values(subjects))
	}
}

// A mirror run whose versions failed (before or after their tag: an
// attestation that failed after storing), were denied or found complete
// announces none of them, only the one stored; a push that wrote
// nothing (up to date) or into a layout announces nothing.
func TestOnlyWhatWasWrittenIsAnnounced(t *testing.T) {
	srv, got := collecting(t)
	var stderr bytes.Buffer
	s, err := Open(Options{File: subscriptionsFile(t, srv.URL), Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	ref := "oci.example.com/providers/acme/aws:"
	s.Mirrored([]ingest.Result{
		{Provider: "origin.example.com/acme/aws", Version: "1.0.0", Reference: ref + "1.0.0", Digest: "sha256:" + strings.Repeat("1", 64)},
		{Provider: "origin.example.com/acme/aws", Version: "1.1.0", Error: "a platform's download failed"},
		{Provider: "origin.example.com/acme/aws", Version: "1.2.0", Reference: ref + "1.2.0", Digest: "sha256:" + strings.Repeat("2", 64), Error: "stored, but signing and attesting it failed"},
		{Provider: "origin.example.com/acme/aws", Version: "1.3.0", Denied: "rule r"},
		{Provider: "origin.example.com/acme/aws", Version: "1.4.0", Reference: ref + "1.4.0", Digest: "sha256:" + strings.Repeat("4", 64), Skipped: true},
	})
	s.Pushed(events.KindProvider, "registry.opentofu.org/acme/aws", "oci.example.com/providers/acme/aws", []string{"2.0.0"}, oci.PushResult{UpToDate: true})
	s.Pushed(events.KindProvider, "registry.opentofu.org/acme/aws", oci.LayoutPrefix+"/tmp/x", []string{"2.1.0"}, oci.PushResult{})
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v; stderr:\n%s", err, stderr.String())
	}
	if subjects := got(); !slices.Equal(subjects, []string{"origin.example.com/acme/aws@1.0.0"}) {
		t.Errorf("announced %v, not the one version stored", subjects)
	}
}
