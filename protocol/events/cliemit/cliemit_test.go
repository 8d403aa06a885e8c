package cliemit

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/events/webhook"
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
