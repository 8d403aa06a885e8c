package webhook

import (
	"bufio"
	"context"
	"fmt"
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
	"github.com/prometheus/client_golang/prometheus"
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
	return rawServerFunc(t, func(c net.Conn) { io.WriteString(c, answer) })
}

// rawServerFunc is rawServer answering each request with answer.
func rawServerFunc(t *testing.T, answer func(net.Conn)) string {
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
				answer(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// TestLoopbackForms: plain http is taken to 127.0.0.1 and ::1 (and the
// IPv4-mapped form of 127.0.0.1, the same address) only: other loopback
// addresses, names, numeric spellings, zones and userinfo tricks are
// refused.
func TestLoopbackForms(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8080/x", "http://[::1]:8080/", "http://[::ffff:127.0.0.1]/", "HTTP://127.0.0.1/"} {
		if _, err := parseURL(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://localhost/", "http://127.0.0.2/", "http://2130706433/", "http://0x7f.0.0.1/", "http://127.1/",
		"http://[::1%25lo]/", "http://0.0.0.0/", "http://[::]/", "http://127.0.0.1.nip.io/", "http://u@127.0.0.1/",
		"http://127.0.0.1:80@evil.example/", "http://evil.example#@127.0.0.1/", "http://evil.example\\@127.0.0.1/",
		"http://[0:0:0:0:0:0:0:2]/", "//127.0.0.1/", "http:127.0.0.1"} {
		if u, err := parseURL(bad); err == nil {
			t.Errorf("%s taken (host %q)", bad, u.Host)
		}
	}
}

// TestHostileAnswers: an endpoint answering headers over the bound,
// informational answers without end, or a body without end fails the
// attempt (or is delivered, for the body), its bound read, not more.
func TestHostileAnswers(t *testing.T) {
	huge := "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", 2*maxHeader) + "\r\nContent-Length: 0\r\n\r\n"
	for name, answer := range map[string]func(net.Conn){
		"huge headers": func(c net.Conn) { io.WriteString(c, huge) },
		"1xx forever": func(c net.Conn) {
			for {
				if _, err := io.WriteString(c, "HTTP/1.1 102 Processing\r\nX-Pad: "+strings.Repeat("p", 1000)+"\r\n\r\n"); err != nil {
					return
				}
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			addr := rawServerFunc(t, answer)
			d := newDispatcher(t, Options{Attempts: 1}, subscription(t, "h", "http://"+addr+"/", 10*time.Second, NewSecret()))
			d.Emit(context.Background(), ingested("1.0.0"))
			eventually(t, "the delivery ended", func() bool { return len(d.Recent()) > 0 })
			if r := d.Recent()[0]; r.Outcome != OutcomeFailed {
				t.Errorf("%+v", r)
			}
		})
	}
	t.Run("endless body", func(t *testing.T) {
		rc := newReceiver(t, nil, func(_ int, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			chunk := []byte(strings.Repeat("z", 4096))
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		})
		d := newDispatcher(t, Options{Attempts: 1}, subscription(t, "b", rc.srv.URL, 10*time.Second, NewSecret()))
		d.Emit(context.Background(), ingested("1.0.0"))
		eventually(t, "the delivery ended", func() bool { return len(d.Recent()) > 0 })
		if r := d.Recent()[0]; r.Outcome != OutcomeDelivered {
			t.Errorf("%+v", r)
		}
		closeNow(t, d) // its connection is not kept: the handler's writes end
		rc.srv.CloseClientConnections()
	})
}

// TestParseErrorsHoldNoSecrets: a file's errors are logged on a reload,
// so none quotes a secret: not one written where a secret file's name
// goes (an easy slip), nor one under a key YAML reads as null.
func TestParseErrorsHoldNoSecrets(t *testing.T) {
	s := NewSecret()
	for name, f := range map[string]string{
		"a secret as a file name": "subscriptions:\n- name: s\n  url: https://h.example/\n  secret_files: [\"" + s + "\"]\n",
		"a secret in a file name": "subscriptions:\n- name: s\n  url: https://h.example/\n  secret_files: [\"/run/" + s + "\"]\n",
		"a null key":              "subscriptions:\n- name: s\n  url: https://h.example/\n  ~: [" + s + "]\n",
		"a list key":              "subscriptions:\n- name: s\n  url: https://h.example/\n  ? [a]\n  : " + s + "\n",
	} {
		_, err := Parse([]byte(f), t.TempDir())
		if err == nil {
			t.Errorf("%s: parsed", name)
			continue
		}
		if b64 := strings.TrimPrefix(s, SecretPrefix); strings.Contains(err.Error(), b64) || strings.Contains(err.Error(), b64[:16]) {
			t.Errorf("%s: the error quotes the secret: %v", name, err)
		}
	}
}

// TestReloadChurn: reloads that rename a subscription each time leave
// neither the removed ones' workers running nor their metric series
// behind (a generated file naming subscriptions by a hash would
// otherwise grow both without end).
func TestReloadChurn(t *testing.T) {
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, nil)
	d := newDispatcher(t, Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(d.Collector())
	var removed []*worker
	for i := range 100 {
		name := fmt.Sprintf("s%d", i)
		d.mu.RLock()
		removed = append(removed, d.workers...)
		d.mu.RUnlock()
		if err := d.Apply(&Config{Subscriptions: []Subscription{subscription(t, name, rc.srv.URL, time.Second, secret)}}); err != nil {
			t.Fatal(err)
		}
		d.Emit(context.Background(), ingested("1.0.0"))
	}
	for _, w := range removed {
		<-w.done // a worker left running would hang here
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "subscription" && l.GetValue() != "s99" {
					t.Errorf("%s keeps a series of the removed subscription %s", f.GetName(), l.GetValue())
				}
			}
		}
	}
}

// TestManyIdleSubscriptions: a file may name at most MaxSubscriptions,
// and an idle subscription's queue holds nothing until events wait: the
// most a file may name cost a few megabytes, not a preallocated queue
// of DefaultQueueSize events each.
func TestManyIdleSubscriptions(t *testing.T) {
	secret := NewSecret()
	var b strings.Builder
	b.WriteString("subscriptions:\n")
	for i := range MaxSubscriptions + 1 {
		fmt.Fprintf(&b, "- {name: s%d, url: 'https://h.example/', secrets: [%s]}\n", i, secret)
	}
	if _, err := Parse([]byte(b.String()), ""); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("%d subscriptions: %v", MaxSubscriptions+1, err)
	}
	subs := make([]Subscription, MaxSubscriptions)
	for i := range subs {
		subs[i] = subscription(t, fmt.Sprintf("s%d", i), "https://h.example/", time.Second, secret)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d := newDispatcher(t, Options{}, subs...)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
		t.Errorf("%d idle subscriptions grew the heap by %d bytes", len(subs), grew)
	}
	if q := d.workers[0].q; len(q.items) != 0 {
		t.Errorf("an idle queue holds a ring of %d", len(q.items))
	}
}
