package testenv

import (
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// DelayFront is a TCP relay on loopback that delays every byte by a fixed
// time each way, to put a registry (or anything else) at a distance for
// benchmarks: 20 ms each way is a 40 ms round trip. It does not look into
// the stream, so TLS passes through untouched; bytes are delayed, not
// throttled, so a transfer keeps its bandwidth and pays the latency.
type DelayFront struct {
	// Host is "localhost:PORT", as clients name it.
	Host string
	// Upstream is the host:port the front relays to.
	Upstream string
	// Delay is added in each direction.
	Delay time.Duration

	l     net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  bool
	wg    sync.WaitGroup
	// accepted counts the connections clients opened.
	accepted atomic.Int64
}

// Connections is how many connections clients have opened through the
// front (each a TCP and, for HTTPS, a TLS handshake at the distance).
func (d *DelayFront) Connections() int { return int(d.accepted.Load()) }

// delayChunk is the most bytes read (and delayed) at once.
const delayChunk = 32 << 10

// delayQueue bounds the chunks in flight per direction (backpressure).
const delayQueue = 512

// StartDelayFront relays localhost:PORT to upstream (host:port) with
// oneWay added each way; it stops when the test ends.
func StartDelayFront(t testing.TB, upstream string, oneWay time.Duration) *DelayFront {
	t.Helper()
	d := &DelayFront{Upstream: upstream, Delay: oneWay, conns: map[net.Conn]struct{}{}}
	d.l = listenLoopback(t)
	d.Host = loopbackHost(d.l)
	d.wg.Add(1)
	go d.accept()
	t.Cleanup(d.close)
	return d
}

// ServeFile serves one file over TLS (test CA) behind a delay front of its
// own with the same delay and returns its URL: a reference for what one
// plain HTTPS round trip and transfer cost at this distance.
func (d *DelayFront) ServeFile(t testing.TB, path string) string {
	t.Helper()
	name := filepath.Base(path)
	l := listenLoopback(t)
	serveTLS(t, l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/"+name {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, path)
	}))
	ref := StartDelayFront(t, l.Addr().String(), d.Delay)
	return "https://" + ref.Host + "/" + name
}

func (d *DelayFront) accept() {
	defer d.wg.Done()
	for {
		c, err := d.l.Accept()
		if err != nil {
			return
		}
		if !d.track(c) {
			c.Close()
			return
		}
		d.accepted.Add(1)
		d.wg.Add(1)
		go d.relay(c)
	}
}

// track remembers an open connection; false once the front is closing.
func (d *DelayFront) track(c net.Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return false
	}
	d.conns[c] = struct{}{}
	return true
}

func (d *DelayFront) untrack(c net.Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.conns, c)
}

// relay connects a client to the upstream and pumps both ways.
func (d *DelayFront) relay(client net.Conn) {
	defer d.wg.Done()
	defer d.untrack(client)
	defer client.Close()
	up, err := net.DialTimeout("tcp", d.Upstream, 10*time.Second)
	if err != nil {
		return
	}
	if !d.track(up) {
		up.Close()
		return
	}
	defer d.untrack(up)
	defer up.Close()
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); d.pump(up, client) }()
	go func() { defer both.Done(); d.pump(client, up) }()
	both.Wait()
}

// delayed is a chunk of bytes due at a time; nil data is end of stream.
type delayed struct {
	buf  *[]byte // from delayBuffers, returned once written
	data []byte
	due  time.Time
}

// pump copies src to dst, each chunk written Delay after it was read.
// Reading goes on while earlier chunks wait, so the delay is latency, not
// a cap on bandwidth.
func (d *DelayFront) pump(dst, src net.Conn) {
	queue := make(chan delayed, delayQueue)
	go func() {
		defer close(queue)
		for {
			buf := delayBuffers.Get().(*[]byte)
			n, err := src.Read(*buf)
			if n > 0 {
				queue <- delayed{buf: buf, data: (*buf)[:n], due: time.Now().Add(d.Delay)}
			} else {
				delayBuffers.Put(buf)
			}
			if err != nil {
				queue <- delayed{due: time.Now().Add(d.Delay)}
				return
			}
		}
	}()
	for c := range queue {
		time.Sleep(time.Until(c.due))
		if c.data == nil {
			closeWrite(dst)
			break
		}
		_, err := dst.Write(c.data)
		delayBuffers.Put(c.buf)
		if err != nil {
			src.Close()
			dst.Close()
			break
		}
	}
	for c := range queue { // let the reader finish
		if c.buf != nil {
			delayBuffers.Put(c.buf)
		}
	}
}

// delayBuffers holds the read buffers of every pump: a front relays
// thousands of small answers, and a fresh 32 KiB buffer for each read made
// the benchmark process spend on allocation and collection what a real
// network does not cost the machine.
var delayBuffers = sync.Pool{New: func() any { b := make([]byte, delayChunk); return &b }}

// closeWrite half-closes a TCP connection (the peer reads EOF).
func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
		return
	}
	c.Close()
}

// Cut stops the front before the test ends, as a network partition
// would: open connections are dropped, new ones refused.
func (d *DelayFront) Cut() { d.close() }

// close stops accepting, drops open connections and waits for the relays
// (again: nothing more).
func (d *DelayFront) close() {
	d.l.Close()
	d.mu.Lock()
	d.done = true
	for c := range d.conns {
		c.Close()
	}
	d.mu.Unlock()
	d.wg.Wait()
}
