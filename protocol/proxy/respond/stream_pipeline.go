package respond

import (
	"io"
	"net/http"
)

// pipeBuffers is how many buffers a pipelined download streams through.
const pipeBuffers = 4

// pipe hands buffers between a pipeline's reader goroutine and the
// handler: they come from free and go back full on full. The reader
// closes full, and done, when it stops, with what it found set before.
type pipe struct {
	done chan struct{}
	free chan *[]byte
	full chan chunk
}

// chunk is a buffer read from the registry and hashed, on its way to the
// client.
type chunk struct {
	buf *[]byte
	n   int
}

// pipeline streams the blob through a reader goroutine, which reads and
// hashes the registry's bytes while the handler writes earlier buffers
// to the client. The last buffer is written only once the whole blob has
// verified; otherwise the response is aborted.
func (st *blobStream) pipeline(w http.ResponseWriter) {
	p := &pipe{done: make(chan struct{}), free: make(chan *[]byte, pipeBuffers), full: make(chan chunk, pipeBuffers)}
	for i := 0; i < pipeBuffers; i++ {
		p.free <- bufPool.Get().(*[]byte)
	}
	st.pipe = p
	go st.readPipe(p)
	ctl := http.NewResponseController(w)
	var held chunk
	for c := range p.full {
		if held.buf != nil {
			st.write(w, ctl, held.buf, held.n)
			p.free <- held.buf
		}
		held = c
	}
	// full is closed: the reader is done and its results are visible.
	if reason, err := st.verdict(); err != nil {
		st.abort(reason, err)
	}
	if held.buf != nil {
		st.write(w, ctl, held.buf, held.n)
		p.free <- held.buf // never blocks: as many slots as buffers
	}
}

// readPipe is the reader goroutine: it fills free buffers from the
// registry until the stream ends, at most one byte more than the
// descriptor's size (which reveals an over-long blob).
func (st *blobStream) readPipe(p *pipe) {
	defer close(p.done)
	defer close(p.full)
	src := io.LimitReader(st.rc, st.zip.Size+1)
	for more := true; more; {
		var buf *[]byte
		select {
		case buf = <-p.free:
		case <-st.ctx.Done():
			st.readErr, st.readReason = st.ctx.Err(), "cancelled"
			return
		}
		var n int
		n, more = st.read(src, *buf)
		if n == 0 {
			p.free <- buf
			continue
		}
		p.full <- chunk{buf, n} // never blocks: as many slots as buffers
	}
}

// close waits for the reader to stop (the stream's context is cancelled
// and the registry's response closed first) and returns its buffers to
// the pool. A buffer the handler held when it aborted is left to the GC.
func (p *pipe) close() {
	<-p.done
	for c := range p.full {
		bufPool.Put(c.buf)
	}
	for {
		select {
		case b := <-p.free:
			bufPool.Put(b)
		default:
			return
		}
	}
}
