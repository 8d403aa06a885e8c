package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/events/webhook"
)

// The CLI's events (docs/events.md, "What the CLI sends"): each command
// run with --events-file against a real Distribution, its deliveries
// verified with the Standard Webhooks reference library. The CLI waits
// for its deliveries before it exits, so each run's events are there
// when it returns.

// cliEventsReceiver is a webhook endpoint verifying every delivery's
// signature; status is what it answers (204 when 0).
type cliEventsReceiver struct {
	t      *testing.T
	hook   *standardwebhooks.Webhook
	file   string // the subscriptions file naming it
	status int

	mu  sync.Mutex
	got []events.Event
	bad []string
}

func startCLIEventsReceiver(t *testing.T, status int) *cliEventsReceiver {
	t.Helper()
	secret := webhook.NewSecret()
	hook, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	rc := &cliEventsReceiver{t: t, hook: hook, status: status}
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(srv.Close)
	rc.file = filepath.Join(t.TempDir(), "events.yaml")
	yaml := fmt.Sprintf("subscriptions:\n- name: all\n  url: %s/hook\n  secrets: [%s]\n", srv.URL, secret)
	if err := os.WriteFile(rc.file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return rc
}

func (rc *cliEventsReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := rc.hook.Verify(body, r.Header); err != nil {
		rc.bad = append(rc.bad, "signature: "+err.Error())
	} else if e, err := events.Parse(body); err != nil {
		rc.bad = append(rc.bad, "event: "+err.Error())
	} else {
		rc.got = append(rc.got, e)
	}
	if rc.status != 0 {
		w.WriteHeader(rc.status)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// take is the events received since the last take, failing the test on
// a delivery that did not verify.
func (rc *cliEventsReceiver) take() []events.Event {
	rc.t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, b := range rc.bad {
		rc.t.Errorf("a delivery was refused: %s", b)
	}
	got := rc.got
	rc.got, rc.bad = nil, nil
	return got
}

// wantEvent is an expected event: its type, subject and data.
type wantEvent struct {
	typ, subject string
	data         events.Data
}

// expectEvents checks got is exactly want, in any order, from source.
func expectEvents(t *testing.T, what, source string, got []events.Event, want ...wantEvent) {
	t.Helper()
	left := append([]wantEvent(nil), want...)
	for _, e := range got {
		i := matchEvent(e, left)
		if i < 0 || (source != "" && e.Source != source) {
			t.Errorf("%s: unexpected event %s %s from %s: %+v", what, e.Type, e.Subject, e.Source, e.Data)
			continue
		}
		left = append(left[:i], left[i+1:]...)
	}
	for _, w := range left {
		t.Errorf("%s: no event %s %s %+v (got %d events)", what, w.typ, w.subject, w.data, len(got))
	}
}

func matchEvent(e events.Event, want []wantEvent) int {
	for i, w := range want {
		if e.Type != w.typ || e.Subject != w.subject {
			continue
		}
		switch d := e.Data.(type) {
		case events.VersionIngested:
			if w, ok := w.data.(events.VersionIngested); ok && d == w {
				return i
			}
		case events.VersionPruned:
			if w, ok := w.data.(events.VersionPruned); ok && d == w {
				return i
			}
		}
	}
	return -1
}

func ingestedEvent(kind events.Kind, address, version string, via events.Via, repository, digest string) wantEvent {
	return wantEvent{typ: events.TypeVersionIngested, subject: address + "@" + version, data: events.VersionIngested{
		Kind: kind, Address: address, Version: version, Via: via, Repository: repository, Digest: digest}}
}

// Push provider and push module send version.ingested via push for the
// version they wrote, the digest the tag holds; an idempotent re-push
// (every tag already holding the content) and a module pushed only as
// latest send none, a --replace with other content sends it again; push
// tofu sends one for the release, a push into an OCI layout (not a
// registry) none; the source is --events-source, else the host's URN.
func TestCLIEventsPush(t *testing.T) {
	isolateCache(t)
	rc := startCLIEventsReceiver(t, 0)
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/providers/test/hello"
	push := func(args ...string) string {
		return mustRun(t, append([]string{"push", "provider", "--json", "--events-file", rc.file, "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"),
			testenv.Testdata(t, "providers", "hello", "1.0.0"), repo}, args...)...)
	}
	out := push("--events-source", "urn:test:ci")
	digest := jsonField(t, out, "digest")
	if tagged := tagDigest(t, reg, "providers/test/hello", "1.0.0"); tagged != digest {
		t.Fatalf("the tag holds %s, push said %s", tagged, digest)
	}
	expectEvents(t, "push provider", "urn:test:ci", rc.take(),
		ingestedEvent(events.KindProvider, "registry.opentofu.org/test/hello", "1.0.0", events.ViaPush, repo, digest))

	push()
	expectEvents(t, "an idempotent re-push", "", rc.take())

	tofuRepo := reg.Host + "/tools/opentofu"
	out = mustRun(t, "push", "tofu", "--json", "--events-file", rc.file, "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), testenv.Testdata(t, "tofu", "1.9.0"), tofuRepo)
	if tagged := tagDigest(t, reg, "tools/opentofu", "1.9.0"); tagged != jsonField(t, out, "digest") {
		t.Fatalf("the tofu tag holds %s, push said %s", tagged, jsonField(t, out, "digest"))
	}
	expectEvents(t, "push tofu", "", rc.take(),
		ingestedEvent(events.KindTofu, "tofu", "1.9.0", events.ViaPush, tofuRepo, jsonField(t, out, "digest")))
	mustRun(t, "push", "provider", "--events-file", rc.file, "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"),
		testenv.Testdata(t, "providers", "hello", "1.1.0"), "oci-layout:"+t.TempDir())
	expectEvents(t, "a push into an OCI layout", "", rc.take())

	module := reg.Host + "/modules/acme/greeting/aws"
	res := pushModule(t, "--events-file", rc.file, testenv.Testdata(t, "modules", "greeting"), module+":1.0.0")
	if tagged := tagDigest(t, reg, "modules/acme/greeting/aws", "1.0.0"); tagged != res.Digest {
		t.Fatalf("the module tag holds %s, push said %s", tagged, res.Digest)
	}
	got := rc.take()
	expectEvents(t, "push module", "", got,
		ingestedEvent(events.KindModule, "registry.opentofu.org/acme/greeting/aws", "1.0.0", events.ViaPush, module, res.Digest))
	if len(got) == 1 && !strings.HasPrefix(got[0].Source, "urn:oci-tofu:cli:") {
		t.Errorf("the default source is %q, want urn:oci-tofu:cli:<host name>", got[0].Source)
	}
	pushModule(t, "--events-file", rc.file, testenv.Testdata(t, "modules", "greeting"), reg.Host+"/modules/acme/other/aws:latest")
	expectEvents(t, "a module pushed as latest only", "", rc.take())

	other := testenv.WriteConfig(t, map[string]string{"main.tf": "output \"x\" {\n  value = 2\n}\n"})
	replaced := pushModule(t, "--events-file", rc.file, "--replace", other, module+":1.0.0")
	if replaced.Digest == res.Digest {
		t.Fatal("the replacement has the same digest")
	}
	expectEvents(t, "push module --replace", "", rc.take(),
		ingestedEvent(events.KindModule, "registry.opentofu.org/acme/greeting/aws", "1.0.0", events.ViaPush, module, replaced.Digest))
}

// A subscriptions file that does not load stops the push before
// anything is written; an endpoint that refuses the events does not fail
// the push, which says so on stderr.
func TestCLIEventsFailures(t *testing.T) {
	reg := testenv.StartRegistry(t)
	bad := filepath.Join(t.TempDir(), "events.yaml")
	if err := os.WriteFile(bad, []byte("subscriptions:\n- name: x\n  url: http://example.com/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"push", "provider", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), testenv.Testdata(t, "providers", "hello", "1.0.0"), reg.Host + "/providers/test/hello"}
	out, err := run(t, append(args, "--events-file", bad)...)
	if err == nil || !strings.Contains(out, "--events-file") || !strings.Contains(out, bad) {
		t.Fatalf("push with a bad events file: %v\n%s", err, out)
	}
	if d := tagDigest(t, reg, "providers/test/hello", "1.0.0"); d != "" {
		t.Fatalf("the push wrote %s despite the bad events file", d)
	}

	gone := startCLIEventsReceiver(t, http.StatusGone)
	out, err = run(t, append(args, "--events-file", gone.file)...)
	if err != nil || !strings.Contains(out, "warning: events") || !strings.Contains(out, "the registry was changed all the same") {
		t.Fatalf("push to an endpoint answering 410: %v, want success with a warning\n%s", err, out)
	}
	if d := tagDigest(t, reg, "providers/test/hello", "1.0.0"); d == "" {
		t.Fatal("the push wrote no tag")
	}
	if n := len(gone.take()); n != 1 {
		t.Errorf("the endpoint got %d events, want 1 (410 is not retried)", n)
	}
}

// Mirror sends version.ingested via mirror for each provider version
// and module version it stored, none for those it finds complete.
func TestCLIEventsMirror(t *testing.T) {
	isolateCache(t)
	rc := startCLIEventsReceiver(t, 0)
	gpgKey := testenv.Testdata(t, "keys", "gpg-signer.asc")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{
		{Namespace: "test", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.0.0"), Key: gpgKey},
		{Namespace: "test", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.1.0"), Key: gpgKey},
	})
	mods := startModuleOrigin(t)
	modHost := strings.Replace(mods.reg.Host, "localhost", "127.0.0.1", 1)
	reg := testenv.StartRegistry(t)
	args := []string{"mirror", "--events-file", rc.file, "--provider-template", reg.Host + "/mirror/${namespace}/${type}", "--platform", "linux_amd64",
		"--module-template", reg.Host + "/mirrored/${namespace}/${name}/${system}", "--module-source", mods.git.Host,
		"--module", modHost + "/acme/greeting/aws@1.0.0", origin.Host + "/test/hello@~> 1.0"}
	mustRun(t, args...)
	repo, modRepo := reg.Host+"/mirror/test/hello", reg.Host+"/mirrored/acme/greeting/aws"
	expectEvents(t, "mirror", "", rc.take(),
		ingestedEvent(events.KindProvider, origin.Host+"/test/hello", "1.0.0", events.ViaMirror, repo, tagDigest(t, reg, "mirror/test/hello", "1.0.0")),
		ingestedEvent(events.KindProvider, origin.Host+"/test/hello", "1.1.0", events.ViaMirror, repo, tagDigest(t, reg, "mirror/test/hello", "1.1.0")),
		ingestedEvent(events.KindModule, modHost+"/acme/greeting/aws", "1.0.0", events.ViaMirror, modRepo, tagDigest(t, reg, "mirrored/acme/greeting/aws", "1.0.0")))

	mustRun(t, args...)
	expectEvents(t, "a mirror finding everything complete", "", rc.take())
}

// Prune sends version.pruned for each version --apply deleted, with the
// digest it held; a dry run sends none. OCI_TOFU_EVENTS_FILE is the
// flag's variable.
func TestCLIEventsPrune(t *testing.T) {
	rc := startCLIEventsReceiver(t, 0)
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/providers/test/hello"
	pushHello(t, repo, "1.0.0", "1.1.0", "2.0.0-rc1")
	old := tagDigest(t, reg, "providers/test/hello", "1.0.0")
	if res, out, err := runPrune(t, "--events-file", rc.file, "--keep-newest", "1", repo); err != nil || actions(res)["1.0.0"] != "delete" {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	expectEvents(t, "a dry run", "", rc.take())

	t.Setenv("OCI_TOFU_EVENTS_FILE", rc.file) // the flag's variable
	if res, out, err := runPrune(t, "--apply", "--keep-newest", "1", repo); err != nil || actions(res)["1.0.0"] != "deleted" {
		t.Fatalf("prune --apply: %v\n%s", err, out)
	}
	if d := tagDigest(t, reg, "providers/test/hello", "1.0.0"); d != "" {
		t.Fatalf("1.0.0 is still tagged %s", d)
	}
	expectEvents(t, "prune --apply", "", rc.take(), wantEvent{typ: events.TypeVersionPruned, subject: "registry.opentofu.org/test/hello@1.0.0",
		data: events.VersionPruned{Address: "registry.opentofu.org/test/hello", Version: "1.0.0", Repository: repo, Digest: old}})
}
