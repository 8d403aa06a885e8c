package sharedstate

import (
	"fmt"
	"net"
)

// Bounds on what one Redis reply may hold, checked on the bytes as they
// arrive, before redigo reads them: redigo allocates a bulk string or an
// array of the length the server announces, so without them a server (or
// a man in the middle on plain redis://) that announces 100 GiB makes
// every replica try to allocate it. Nothing this package asks for comes
// near them: a record is at most maxRecord bytes, a board gather at most
// 2 × MaxBoardMembers items of at most maxRecord each.
const (
	maxReplyBulk  = maxRecord
	maxReplyLine  = maxRecord
	maxReplyArray = 1024
	maxReplyBytes = 4 << 20
)

// respState is where a respGuard is in the stream of replies.
type respState int

const (
	respType respState = iota // at the type byte of the next element
	respLine                  // in an element's header line
	respBulk                  // in a bulk string's payload and its CRLF
)

// respGuard reads a connection's replies (RESP2) through the bounds: a
// bulk string, an array, a line or one whole reply over its bound, or a
// type RESP2 does not have, fails the read, and the connection with it,
// before redigo sees the header. The guard never holds more than the
// chunk being read.
type respGuard struct {
	net.Conn
	state  respState
	kind   byte  // of the element whose header is being read
	line   int   // bytes of the header so far
	length int64 // the header's number so far
	minus  bool  // the number is negative (a null: $-1, *-1)
	skip   int64 // payload and CRLF left in respBulk
	// open counts the elements the current reply still has to send;
	// replyBytes what it sent so far.
	open       int64
	replyBytes int64
	err        error
}

func (g *respGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.Conn.Read(p)
	if serr := g.scan(p[:n]); serr != nil {
		g.err = serr
		return 0, serr
	}
	return n, err
}

// scan follows the replies through b.
func (g *respGuard) scan(b []byte) error {
	for len(b) > 0 {
		n, err := g.step(b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// step reads the next bytes of b — one byte of a type or a header, or as
// much of a bulk payload as b holds — counted against the reply's bound,
// and says how many it read.
func (g *respGuard) step(b []byte) (int, error) {
	n := 1
	if g.state == respBulk {
		n = int(min(g.skip, int64(len(b))))
	}
	if g.replyBytes += int64(n); g.replyBytes > maxReplyBytes {
		return 0, fmt.Errorf("shared state: a Redis reply larger than %d bytes: refused", maxReplyBytes)
	}
	switch g.state {
	case respType:
		return n, g.startElement(b[0])
	case respLine:
		return n, g.headerByte(b[0])
	}
	if g.skip -= int64(n); g.skip == 0 {
		g.endElement()
	}
	return n, nil
}

// startElement reads an element's type byte.
func (g *respGuard) startElement(c byte) error {
	switch c {
	case '+', '-', ':', '$', '*':
	default:
		return fmt.Errorf("shared state: a Redis reply of type %q, which RESP2 does not have: refused", c)
	}
	if g.open == 0 {
		g.open = 1 // a new reply
	}
	g.kind, g.line, g.length, g.minus, g.state = c, 0, 0, false, respLine
	return nil
}

// headerByte reads a byte of an element's header line, up to its LF.
func (g *respGuard) headerByte(c byte) error {
	g.line++
	if g.line > maxReplyLine {
		return fmt.Errorf("shared state: a Redis reply line longer than %d bytes: refused", maxReplyLine)
	}
	if c == '\n' {
		return g.endHeader()
	}
	if g.kind != '$' && g.kind != '*' {
		return nil // a simple string, an error or an integer: bounded by maxReplyLine
	}
	switch {
	case c == '-' && g.line == 1:
		g.minus = true
	case c >= '0' && c <= '9':
		g.length = g.length*10 + int64(c-'0')
		if limit := g.lengthLimit(); g.length > limit {
			return fmt.Errorf("shared state: a Redis reply announces %s longer than %d: refused", g.what(), limit)
		}
	case c == '\r':
	default:
		return fmt.Errorf("shared state: a malformed Redis reply header: refused")
	}
	return nil
}

// lengthLimit is the bound of the current header's number.
func (g *respGuard) lengthLimit() int64 {
	if g.kind == '$' {
		return maxReplyBulk
	}
	return maxReplyArray
}

func (g *respGuard) what() string {
	if g.kind == '$' {
		return "a bulk string"
	}
	return "an array"
}

// endHeader acts on a complete header line: a bulk string's payload
// follows, an array's elements are expected, anything else is complete.
func (g *respGuard) endHeader() error {
	switch {
	case g.kind == '$' && !g.minus:
		g.state, g.skip = respBulk, g.length+2
		return nil
	case g.kind == '*' && !g.minus:
		g.open += g.length
	}
	g.endElement()
	return nil
}

// endElement counts an element as complete; the reply is complete when
// none is left open.
func (g *respGuard) endElement() {
	g.state = respType
	g.open--
	if g.open == 0 {
		g.replyBytes = 0
	}
}
