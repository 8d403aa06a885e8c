package audit_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
)

func download(client, address, version string, at time.Time) *audit.Event {
	return &audit.Event{Time: at, Event: audit.EventDownload, Outcome: audit.OutcomeDelivered, Client: client, Identity: audit.IdentityClient,
		Kind: "provider", Address: address, Version: version, Platform: "linux_amd64", Repository: "registry.example.com/providers/" + address,
		Digest: "sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03", Source: audit.SourceHeld, Status: 200, Bytes: 1234, Remote: "10.0.0.1"}
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// Every event is one line, whatever a client put in its strings; Close
// writes what was buffered.
func TestLogWritesOneEscapedLinePerEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(audit.Options{Path: path, FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	hostile := "tofu\n{\"v\":1,\"client\":\"forged\"}\r\x00\u2028"
	ev := download("ci", "example.com/hashicorp/aws", "5.31.0", time.Now())
	ev.UserAgent = hostile
	l.Record(ev)
	l.Record(download("ci", "example.com/hashicorp/aws", "5.31.0", time.Now()))
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Fatalf("written before a flush: %q", b)
	}
	l.Close()
	got := lines(t, path)
	if len(got) != 2 {
		t.Fatalf("%d lines, want 2: %q", len(got), got)
	}
	var back audit.Event
	if err := json.Unmarshal([]byte(got[0]), &back); err != nil || back.UserAgent != hostile || back.V != audit.SchemaVersion || back.Client != "ci" {
		t.Fatalf("read back %+v (%v)", back, err)
	}
	// After Close, events are written at once, in the background (a
	// request the shutdown cut short).
	l.Record(download("late", "example.com/hashicorp/aws", "5.31.0", time.Now()))
	deadline := time.Now().Add(10 * time.Second)
	for len(lines(t, path)) != 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := len(lines(t, path)); n != 3 {
		t.Fatalf("%d lines after a late event, want 3", n)
	}
}

// A disk that is full loses events, counted and logged once; the Log
// goes on, and says when writing works again.
func TestLogCountsLostEventsWhenTheDiskIsFull(t *testing.T) {
	var logs testenv.LockedBuffer
	l, err := audit.Open(audit.Options{Path: "/dev/full", FlushEvery: time.Hour, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 3 {
		for range 5 {
			l.Record(download("ci", "example.com/hashicorp/aws", "5.31.0", time.Now()))
		}
		l.Flush()
	}
	lost := l.Collectors()[1]
	if n := testutil.ToFloat64(lost); n != 15 {
		t.Fatalf("lost %v events, want 15", n)
	}
	if n := strings.Count(logs.String(), "audit events lost"); n != 1 {
		t.Fatalf("logged %d times, want once: %s", n, logs.String())
	}
}

// A file that cannot be opened is refused at start.
func TestOpenRefusesAFileItCannotWrite(t *testing.T) {
	_, err := audit.Open(audit.Options{Path: filepath.Join(t.TempDir(), "missing", "audit.log")})
	if err == nil || !strings.Contains(err.Error(), "audit log") {
		t.Fatalf("err = %v", err)
	}
}

// Files rotate at MaxBytes and at most MaxFiles rotated ones are kept;
// Files finds them all, and what they hold is whole events.
func TestLogRotatesIntoABoundedNumberOfFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	l, err := audit.Open(audit.Options{Path: path, MaxBytes: 1 << 20, MaxFiles: 2, FlushEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const n = 16000 // about 6 MiB
	for i := range n {
		l.Record(download("ci", "example.com/hashicorp/aws", fmt.Sprintf("5.%d.0", i), time.Now()))
	}
	l.Close()
	files, err := audit.Files(path)
	if err != nil {
		t.Fatal(err)
	}
	// lumberjack removes old backups in the background.
	deadline := time.Now().Add(10 * time.Second)
	for len(files) > 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		files, _ = audit.Files(path)
	}
	if len(files) != 3 || files[2] != path {
		t.Fatalf("files %v: want 2 rotated and the current", files)
	}
	tally := audit.NewTally(audit.Filter{})
	if err := audit.Scan(context.Background(), files, tally); err != nil {
		t.Fatal(err)
	}
	if tally.Malformed != 0 || tally.Events == 0 || tally.Events >= n {
		t.Fatalf("%d events, %d malformed, in the kept files", tally.Events, tally.Malformed)
	}
	for _, f := range files {
		if fi, _ := os.Stat(f); fi.Size() > 1<<20 {
			t.Errorf("%s: %d bytes, over MaxBytes", f, fi.Size())
		}
	}
}

// Concurrent writers lose nothing and interleave no lines.
func TestLogKeepsEveryEventOfConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(audit.Options{Path: path, FlushEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				l.Record(download(fmt.Sprint("client-", w), "example.com/hashicorp/aws", fmt.Sprint("1.0.", i), time.Now()))
			}
		}()
	}
	wg.Wait()
	l.Close()
	got := lines(t, path)
	if len(got) != 30*200 {
		t.Fatalf("%d lines, want %d", len(got), 30*200)
	}
	for _, line := range got {
		if !json.Valid([]byte(line)) {
			t.Fatalf("not one event: %q", line)
		}
	}
}

// The files of several replicas are tallied together: downloads by
// version and client, refusals by client; lines that are not events
// (malformed, another schema, longer than a line may be) are counted and
// skipped.
func TestScanTalliesTheFilesOfSeveralReplicas(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var files []string
	for r := range 3 {
		path := filepath.Join(dir, fmt.Sprintf("replica-%d.log", r))
		l, err := audit.Open(audit.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			l.Record(download("ci", "example.com/hashicorp/aws", "5.31.0", base.Add(time.Duration(r*10+i)*time.Hour)))
		}
		l.Record(download("dev", "example.com/hashicorp/aws", "5.40.0", base.Add(time.Duration(r)*time.Hour)))
		l.Record(&audit.Event{Time: base, Event: audit.EventDownload, Outcome: audit.OutcomeDenied, Client: "dev", Kind: "provider", Address: "example.com/hashicorp/aws", Version: "5.1.0"})
		l.Record(&audit.Event{Time: base, Event: audit.EventDownload, Outcome: audit.OutcomeAborted, Client: "dev", Kind: "provider", Address: "example.com/hashicorp/aws", Version: "5.40.0"})
		l.Close()
		files = append(files, path)
	}
	f, _ := os.OpenFile(files[1], os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("not json\n{\"v\":2,\"time\":\"2026-11-01T00:00:00Z\"}\n" + `{"v":1,"time":"2026-11-01T00:00:00Z","event":"download","outcome":"delivered","client":"x","address":"` + strings.Repeat("a", 5<<20) + "\"}\n")
	f.Close()

	tally := audit.NewTally(audit.Filter{})
	if err := audit.Scan(context.Background(), files, tally); err != nil {
		t.Fatal(err)
	}
	if tally.Malformed != 3 {
		t.Errorf("%d malformed lines, want 3", tally.Malformed)
	}
	rows := tally.Group(audit.ByVersionClient)
	if len(rows) != 2 || rows[0].Client != "ci" || rows[0].Count != 30 || rows[0].Version != "5.31.0" ||
		!rows[0].First.Equal(base) || !rows[0].Last.Equal(base.Add(29*time.Hour)) || rows[1].Client != "dev" || rows[1].Count != 3 {
		t.Fatalf("rows %+v", rows)
	}
	if n := tally.Refusals[audit.Refusal{Client: "dev", Outcome: audit.OutcomeDenied}]; n != 3 {
		t.Errorf("denials of dev: %d, want 3", n)
	}
	// A filter counts only what it keeps.
	since := audit.NewTally(audit.Filter{Since: base.Add(25 * time.Hour), Client: "ci"})
	if err := audit.Scan(context.Background(), files, since); err != nil {
		t.Fatal(err)
	}
	if rows := since.Group(audit.ByAddress); len(rows) != 1 || rows[0].Count != 5 {
		t.Fatalf("since: %+v", rows)
	}
	last := tally.LastDownloads()
	if at := last[[2]string{"registry.example.com/providers/example.com/hashicorp/aws", "5.31.0"}]; !at.Equal(base.Add(29 * time.Hour)) {
		t.Errorf("last download of 5.31.0: %v", at)
	}
	// ScanPaths finds the files of a directory and tallies them alike.
	byDir := audit.NewTally(audit.Filter{})
	found, err := audit.ScanPaths(context.Background(), []string{dir}, byDir)
	if err != nil || len(found) != len(files) || len(byDir.Group(audit.ByVersionClient)) != len(rows) {
		t.Errorf("ScanPaths(%s): %v, %v", dir, found, err)
	}
}

// A 1 GiB audit file — events around a line of a gigabyte with no end —
// is read in bounded memory, the line skipped.
func TestScanReadsAGigabyteFileInBoundedMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	ev := download("ci", "example.com/hashicorp/aws", "5.31.0", time.Now())
	ev.V = audit.SchemaVersion
	event, _ := json.Marshal(ev)
	event = append(event, '\n')
	for range 1000 {
		w.Write(event)
	}
	junk := bytes.Repeat([]byte("x"), 1<<20)
	for range 1 << 10 {
		w.Write(junk)
	}
	w.WriteString("\n")
	for range 1000 {
		w.Write(event)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	tally := audit.NewTally(audit.Filter{})
	err = audit.Scan(context.Background(), []string{path}, tally)
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if rows := tally.Group(audit.ByVersion); len(rows) != 1 || rows[0].Count != 2000 || tally.Malformed != 1 {
		t.Fatalf("rows %+v, %d malformed", rows, tally.Malformed)
	}
	if p := peak.Load(); p > 96<<20 {
		t.Fatalf("heap in use peaked at %d MiB reading a 1 GiB file", p>>20)
	}
}

// Refusals of names a token merely claimed (registry-unverified) are
// kept apart from verified ones, and bounded: 100,000 made-up names in
// a trail keep at most MaxUnverified of them, the rest counted together;
// verified names are all kept.
func TestTallyBoundsUnverifiedNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(audit.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	refused := func(client, identity string) *audit.Event {
		return &audit.Event{Time: base, Event: audit.EventDocument, Outcome: audit.OutcomeRefused, Client: client, Identity: identity}
	}
	const guesses = 100000
	for i := range guesses {
		l.Record(refused(fmt.Sprintf("guess-%d", i), audit.IdentityRegistryUnverified))
	}
	l.Record(refused("alice", audit.IdentityRegistry))
	l.Record(refused("alice", audit.IdentityRegistryUnverified))
	l.Close()
	tally := audit.NewTally(audit.Filter{})
	if err := audit.Scan(context.Background(), []string{path}, tally); err != nil {
		t.Fatal(err)
	}
	var unverified, total int64
	for r, n := range tally.Refusals {
		total += n
		if r.Unverified {
			unverified++
		}
	}
	if unverified > audit.MaxUnverified+1 || total != guesses+2 {
		t.Errorf("%d unverified names kept (at most %d and the others), %d refusals counted, want %d", unverified, audit.MaxUnverified, total, guesses+2)
	}
	if tally.Refusals[audit.Refusal{Client: audit.OtherUnverified, Outcome: audit.OutcomeRefused, Unverified: true}] == 0 {
		t.Error("the names past the bound are not counted together")
	}
	if tally.Refusals[audit.Refusal{Client: "alice", Outcome: audit.OutcomeRefused}] != 1 {
		t.Error("the verified alice is not counted apart from the name a token claimed")
	}
}

// stalledPipe is a pipe nobody reads yet: a log pipeline that stopped
// (`serve --audit-log - | sleep 3600`). drain starts reading it.
func stalledPipe(t *testing.T) (w *os.File, drain func()) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	var once sync.Once
	return w, func() { once.Do(func() { go io.Copy(io.Discard, r) }) }
}

// recordsWithin records n events of about 4 KiB in the background and
// reports whether each Record returned within limit of the one before:
// a caller never waits on the sink.
func recordsWithin(l *audit.Log, n int, limit time.Duration) bool {
	progress := make(chan struct{})
	go func() {
		defer close(progress)
		for i := range n {
			ev := download("ci", "example.com/hashicorp/aws", fmt.Sprint("1.0.", i), time.Now())
			ev.UserAgent = strings.Repeat("u", 4000)
			l.Record(ev)
			progress <- struct{}{}
		}
	}()
	for {
		select {
		case _, more := <-progress:
			if !more {
				return true
			}
		case <-time.After(limit):
			return false
		}
	}
}

// A sink nobody reads costs no caller anything: Record never waits on
// it; past the bounded buffer events are lost, counted and logged once;
// when the sink reads again that is logged once too, and what comes
// after is written.
func TestLogNeverWaitsOnAStalledSink(t *testing.T) {
	w, drain := stalledPipe(t)
	var logs testenv.LockedBuffer
	l, err := audit.Open(audit.Options{Path: "-", Stdout: w, FlushEvery: time.Millisecond, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { drain(); l.Close() }()
	const n = 3000 // about 12 MiB of events: past the 8 MiB the buffer holds
	if !recordsWithin(l, n, 30*time.Second) {
		t.Fatal("Record waited more than 30s on an audit sink nobody reads")
	}
	lost := l.Collectors()[1]
	if got := testutil.ToFloat64(lost); got == 0 || got >= n {
		t.Fatalf("%v events lost of %d: want some, not all", got, n)
	}
	if c := strings.Count(logs.String(), "audit events lost"); c != 1 {
		t.Fatalf("the loss logged %d times, want once:\n%s", c, logs.String())
	}
	drain()
	l.Record(download("ci", "example.com/hashicorp/aws", "2.0.0", time.Now()))
	l.Flush()
	if c := strings.Count(logs.String(), "the audit log is written again"); c != 1 {
		t.Fatalf("the recovery logged %d times, want once:\n%s", c, logs.String())
	}
}

// Close waits for a sink nobody reads no longer than CloseTimeout, and
// says how many events it did not write.
func TestLogCloseIsBoundedOnAStalledSink(t *testing.T) {
	w, drain := stalledPipe(t)
	defer drain()
	var logs testenv.LockedBuffer
	l, err := audit.Open(audit.Options{Path: "-", Stdout: w, FlushEvery: time.Hour, CloseTimeout: 50 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if !recordsWithin(l, 100, 30*time.Second) { // 400 KiB: more than the pipe holds
		t.Fatal("Record waited on an audit sink nobody reads")
	}
	closed := make(chan struct{})
	go func() { l.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for an audit sink nobody reads beyond its timeout")
	}
	if !strings.Contains(logs.String(), "audit events not written") {
		t.Fatalf("Close did not say events were left:\n%s", logs.String())
	}
}

// Downloads by a name a token merely claimed (a registry anyone reads
// never asks for the credential) are not counted as that user's: their
// client is marked unverified, and at most MaxUnverified such names are
// kept apart.
func TestTallyMarksUnverifiedDownloaders(t *testing.T) {
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	tally := audit.NewTally(audit.Filter{})
	download := func(client, identity string) *audit.Event {
		return &audit.Event{Time: base, Event: audit.EventDownload, Outcome: audit.OutcomeDelivered, Client: client, Identity: identity,
			Kind: "provider", Address: "example.com/acme/widgets", Version: "1.0.0"}
	}
	tally.Add(download("alice", audit.IdentityRegistry))
	tally.Add(download("alice", audit.IdentityRegistryUnverified))
	for i := range 3 * audit.MaxUnverified {
		tally.Add(download(fmt.Sprintf("claim-%d", i), audit.IdentityRegistryUnverified))
	}
	clients := map[string]int64{}
	for _, r := range tally.Group(audit.ByClient) {
		clients[r.Client] += r.Count
	}
	if clients["alice"] != 1 || clients["alice"+audit.UnverifiedMark] != 1 {
		t.Errorf("alice verified: %d downloads, want 1; claimed: %d, want 1", clients["alice"], clients["alice"+audit.UnverifiedMark])
	}
	if len(clients) > audit.MaxUnverified+2 {
		t.Errorf("%d clients kept, want at most %d unverified names, the others together, and alice", len(clients), audit.MaxUnverified)
	}
}
