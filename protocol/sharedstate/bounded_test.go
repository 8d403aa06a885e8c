package sharedstate_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// allocated is how many bytes the process allocated while fn ran.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A 100 MiB record under a key pull-through reads (written by someone
// with access to Redis: replicas write none over 64 KiB) is refused in
// Redis, before any of it is sent: Get finds no record, allocates next to
// nothing, the store stays healthy, one warning says so; records within
// the bound are read as before.
func TestRedisRefusesALargeRecordBeforeReadingIt(t *testing.T) {
	srv := testenv.StartRedis(t)
	var log bytes.Buffer
	s := openRedis(t, srv.URL(), &log)
	raw, err := redis.DialURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	const key = "stored provider example.com/acme/big 1.0.0"
	// SETRANGE makes the 100 MiB string in Redis without sending it.
	if _, err := raw.Do("SETRANGE", "oci-tofu:"+key, 100<<20-1, "x"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var val []byte
	var ok bool
	n := allocated(func() {
		for range 5 {
			if val, ok, err = s.Get(ctx, key); err != nil || ok {
				return
			}
		}
	})
	if err != nil || ok || val != nil {
		t.Fatalf("Get of the 100 MiB record = %d bytes, %v, %v; want no record and no error", len(val), ok, err)
	}
	if n > 4<<20 {
		t.Errorf("5 reads of the 100 MiB record allocated %d MiB", n>>20)
	}
	if c := strings.Count(log.String(), "ignoring a record larger than the bound"); c != 1 || !strings.Contains(log.String(), key) {
		t.Errorf("%d warnings naming the key for 5 reads (want 1, rate-limited):\n%s", c, log.String())
	}
	if strings.Contains(log.String(), "shared cache unavailable") {
		t.Errorf("an oversized record counted as a failing Redis:\n%s", log.String())
	}
	if err := s.Put(ctx, "small", []byte(`{"root":1}`), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Get(ctx, "small"); !ok || err != nil || string(v) != `{"root":1}` {
		t.Errorf("a record within the bound: %q %v %v", v, ok, err)
	}
	if _, err := raw.Do("SETRANGE", "oci-tofu:edge", 64<<10-1, "x"); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := s.Get(ctx, "edge"); !ok || err != nil || len(v) != 64<<10 {
		t.Errorf("a record of exactly 64 KiB: %d bytes, %v, %v", len(v), ok, err)
	}
}

// fakeRedis answers every command with reply, as a server (or a man in
// the middle on plain redis://) that lies about lengths would, then keeps
// the connection open without sending more.
func fakeRedis(t *testing.T, reply string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					if r.Buffered() == 0 { // the whole command read
						if _, err := c.Write([]byte(reply)); err != nil {
							return
						}
					}
					select {
					case <-done:
						return
					default:
					}
				}
			}()
		}
	}()
	return "redis://" + l.Addr().String() + "/0"
}

// A server announcing a 100 MiB bulk string, a 10-million-item array or
// a line without end is refused as the bytes arrive, before the client
// library allocates what they announce: the operation fails as an
// unavailable store (the replica goes on alone), having allocated next to
// nothing.
func TestRedisRefusesRepliesAnnouncingTooMuch(t *testing.T) {
	for _, c := range []struct{ name, reply, error string }{
		{"100 MiB bulk string", fmt.Sprintf("$%d\r\n", 100<<20), "announces a bulk string longer than 65536"},
		{"10 million items", "*10000000\r\n", "announces an array longer than 1024"},
		{"endless line", "+" + strings.Repeat("x", 1<<20), "line longer than 65536"},
		{"not RESP2", "%1\r\n", "which RESP2 does not have"},
		{"4 MiB in one reply", "*100\r\n" + strings.Repeat(fmt.Sprintf("$%d\r\n%s\r\n", 60<<10, strings.Repeat("y", 60<<10)), 100), "reply larger than 4194304 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			s := openRedis(t, fakeRedis(t, c.reply), &log)
			var err error
			n := allocated(func() { _, _, err = s.Get(context.Background(), "stored x") })
			if !errors.Is(err, sharedstate.ErrUnavailable) || !strings.Contains(err.Error(), c.error) {
				t.Errorf("Get = %v, want ErrUnavailable saying %q", err, c.error)
			}
			if n > 16<<20 {
				t.Errorf("the refused reply cost %d MiB of allocations", n>>20)
			}
		})
	}
}

// The password may come from outside the URL (serve: the environment or
// a file, not the command line); it logs in, and appears in no log line
// when Redis refuses it or is down. A URL with a password and a password
// besides is refused, without either in the error.
func TestRedisPasswordOutsideTheURL(t *testing.T) {
	srv := testenv.StartRedis(t)
	url := "redis://" + srv.Addr + "/0"
	var log bytes.Buffer
	r, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: url, Password: srv.Password, Logger: slogTo(&log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ctx := context.Background()
	if err := r.Put(ctx, "k", []byte("v"), time.Minute); err != nil {
		t.Fatalf("with the password given apart from the URL: %v", err)
	}
	if v, ok, err := r.Get(ctx, "k"); !ok || err != nil || string(v) != "v" {
		t.Fatalf("get: %q %v %v", v, ok, err)
	}

	wrong, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: "redis://default@" + srv.Addr + "/0", Password: "wrong-" + srv.Password, Logger: slogTo(&log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wrong.Close() })
	if _, _, err := wrong.Get(ctx, "k"); !errors.Is(err, sharedstate.ErrUnavailable) || strings.Contains(err.Error(), srv.Password) {
		t.Errorf("a wrong password: %v", err)
	}
	srv.Stop()
	if _, _, err := r.Get(ctx, "k"); !errors.Is(err, sharedstate.ErrUnavailable) {
		t.Errorf("with Redis down: %v", err)
	}
	if !strings.Contains(log.String(), "shared cache unavailable") || strings.Contains(log.String(), srv.Password) {
		t.Errorf("the log lacks the failures, or shows the password:\n%s", log.String())
	}

	_, err = sharedstate.OpenRedis(sharedstate.RedisOptions{URL: "redis://:in-the-url@" + srv.Addr, Password: "given-apart"})
	if err == nil || !strings.Contains(err.Error(), "give one") || strings.Contains(err.Error(), "in-the-url") || strings.Contains(err.Error(), "given-apart") {
		t.Errorf("two passwords: %v", err)
	}
}

func slogTo(w *bytes.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
