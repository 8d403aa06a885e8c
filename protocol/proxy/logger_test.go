package proxy_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
)

// Every line from many writers arrives whole, each writer's in its
// order, and Close returns only when all are written.
func TestLogWriterKeepsEveryLineInOrder(t *testing.T) {
	var out testenv.LockedBuffer
	lw := proxy.NewLogWriter(&out)
	const writers, lines = 8, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				fmt.Fprintf(lw, "w=%d i=%d\n", w, i)
			}
		}()
	}
	wg.Wait()
	lw.Close()
	next := make([]int, writers)
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("%d lines written, want %d", len(got), writers*lines)
	}
	for _, l := range got {
		var w, i int
		if _, err := fmt.Sscanf(l, "w=%d i=%d", &w, &i); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if i != next[w] {
			t.Fatalf("writer %d: line %d after %d", w, i, next[w]-1)
		}
		next[w]++
	}
	fmt.Fprintln(lw, "after close")
	if !strings.HasSuffix(out.String(), "after close\n") {
		t.Fatal("a line after Close was not written")
	}
}

// A line is written soon after it is given, with no Close and no more
// lines behind it.
func TestLogWriterWritesWithoutClose(t *testing.T) {
	var out testenv.LockedBuffer
	lw := proxy.NewLogWriter(&out)
	defer lw.Close()
	fmt.Fprintln(lw, "one line")
	deadline := time.Now().Add(5 * time.Second)
	for out.String() != "one line\n" {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s the output is %q", out.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// blockedWriter blocks every write until release is closed.
type blockedWriter struct {
	release chan struct{}
	testenv.LockedBuffer
}

func (b *blockedWriter) Write(p []byte) (int, error) {
	<-b.release
	return b.LockedBuffer.Write(p)
}

// While the output does not take lines (a full pipe), the writer holds
// at most about a mebibyte and then makes the next line wait.
func TestLogWriterBoundsWhatItHolds(t *testing.T) {
	out := &blockedWriter{release: make(chan struct{})}
	lw := proxy.NewLogWriter(out)
	line := []byte(strings.Repeat("x", 1023) + "\n")
	wrote := make(chan int, 1)
	go func() {
		n := 0
		for ; n < 4096; n++ { // 4 MiB
			lw.Write(line)
		}
		wrote <- n
	}()
	select {
	case n := <-wrote:
		t.Fatalf("%d KiB queued while the output took nothing", n)
	case <-time.After(200 * time.Millisecond):
	}
	close(out.release)
	if n := <-wrote; n != 4096 {
		t.Fatalf("%d lines", n)
	}
	lw.Close()
	if got := len(out.String()); got != 4096*len(line) {
		t.Fatalf("%d bytes written, want %d", got, 4096*len(line))
	}
}
