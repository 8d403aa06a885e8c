package webhook

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/events"
)

// TestReloadNarrowedFiltersHoldBackQueued: events queued for a
// subscription that a reload narrows (fewer types, fewer addresses) and
// points elsewhere are not sent to the new endpoint when the new filters
// do not want them: the queue is what the old settings took, and the
// new receiver must not hear what it never subscribed to.
func TestReloadNarrowedFiltersHoldBackQueued(t *testing.T) {
	secret := NewSecret()
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	old := newReceiver(t, []string{secret}, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			arrived <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	})
	next := newReceiver(t, []string{secret}, nil)
	d := newDispatcher(t, Options{}, subscription(t, "s", old.srv.URL, 10*time.Second, secret))
	d.Emit(context.Background(), ingested("0.0.1"))
	<-arrived // the first event is in flight: the next ones wait in the queue
	for _, e := range every() {
		d.Emit(context.Background(), e)
	}
	narrowed := subscription(t, "s", next.srv.URL, 10*time.Second, secret)
	narrowed.Types = []string{events.TypeVersionIngested}
	narrowed.Addresses = []string{"registry.example.com/acme/*"}
	if err := d.Apply(&Config{Subscriptions: []Subscription{narrowed}}); err != nil {
		t.Fatal(err)
	}
	close(release)
	last := ingested("9.9.9")
	d.Emit(context.Background(), last)
	// One delivery at a time, in order: the last one delivered, every
	// queued one before it has been dealt with.
	eventually(t, "the last event delivered", func() bool {
		next.mu.Lock()
		defer next.mu.Unlock()
		return len(next.got) > 0 && next.got[len(next.got)-1].ID == last.ID
	})
	next.mu.Lock()
	defer next.mu.Unlock()
	for _, e := range next.got {
		if e.Type != events.TypeVersionIngested {
			t.Errorf("the narrowed subscription's endpoint got %s (%s), which it does not want", e.Type, e.Subject)
		}
	}
	if len(next.got) != 2 { // every()'s version.ingested, and the last
		t.Errorf("%d events at the new endpoint, want 2", len(next.got))
	}
}

// TestSecretFileFIFO: a secret file that is a FIFO (or a device, or a
// directory) is refused, not read: opening a FIFO for reading waits for
// a writer, which would hang serve's start or every later reload.
func TestSecretFileFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	// A writer that gives a waiting reader a valid secret: were the FIFO
	// opened as a file, Load would read it and succeed. It polls without
	// blocking (ENXIO while no reader waits) until Load has returned.
	go func() {
		for !done.Load() {
			fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				runtime.Gosched()
				continue
			}
			f := os.NewFile(uintptr(fd), fifo)
			f.WriteString(NewSecret() + "\n")
			f.Close()
			return
		}
	}()
	_, err := Parse([]byte("subscriptions:\n- name: s\n  url: https://h.example/\n  secret_files: [fifo]\n"), dir)
	done.Store(true)
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO as secret file: %v", err)
	}
	for _, p := range []string{"/dev/zero", dir} {
		_, err := Parse([]byte("subscriptions:\n- name: s\n  url: https://h.example/\n  secret_files: ["+p+"]\n"), dir)
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s as secret file: %v", p, err)
		}
	}
}

// TestEventsFileFIFO: the events file itself is refused when it is not
// a regular file (a symlink to one, as Kubernetes mounts it, is read).
func TestEventsFileFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "events.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	go func() {
		for !done.Load() {
			fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				runtime.Gosched()
				continue
			}
			f := os.NewFile(uintptr(fd), fifo)
			f.WriteString("subscriptions: []\n")
			f.Close()
			return
		}
	}()
	_, err := Load(fifo)
	done.Store(true)
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO as events file: %v", err)
	}
	real := filepath.Join(dir, "real.yaml")
	if err := os.WriteFile(real, []byte("subscriptions: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(link); err != nil {
		t.Errorf("a symlink to a file: %v", err)
	}
}

// TestLongReasonPhraseIsClipped: an endpoint answering a status line of
// tens of kilobytes does not put them into the recent deliveries (the
// status page) or the log: the error keeps a short prefix.
func TestLongReasonPhraseIsClipped(t *testing.T) {
	ln := rawServer(t, "HTTP/1.1 500 "+strings.Repeat("x", 60<<10)+"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	d := newDispatcher(t, Options{Attempts: 1}, subscription(t, "long", "http://"+ln+"/", 10*time.Second, NewSecret()))
	d.Emit(context.Background(), ingested("1.0.0"))
	eventually(t, "the delivery failed", func() bool { return len(d.Recent()) > 0 })
	r := d.Recent()[0]
	if r.Outcome != OutcomeFailed || r.StatusCode != 500 {
		t.Errorf("%+v", r)
	}
	if len(r.Error) > maxErrorText+len("…") {
		t.Errorf("the delivery's error is %d bytes long", len(r.Error))
	}
	if !strings.HasPrefix(r.Error, "answered 500 xxx") {
		t.Errorf("error %.40q", r.Error)
	}
}

// rawServer is an endpoint on 127.0.0.1 that reads each request and
// answers answer, bytes as given; it returns its host:port.
func rawServer(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, r.Body)
				io.WriteString(c, answer)
			}()
		}
	}()
	return ln.Addr().String()
}
