package modulesource

import (
	"bufio"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Limits of the git pack a clone receives, checked as it arrives, before
// go-git's parser sees the bytes past a fault: go-git holds each object
// whole in memory while it indexes the pack (a delta with the objects it
// is rebuilt from), and its parser has no deadline. Variables so that
// tests can lower them.
var (
	// gitMaxObjects bounds the objects of a pack (go-git keeps a record
	// of each while it indexes).
	gitMaxObjects = 4 * MaxFiles
	// gitMaxObject bounds an object inflated: a blob, tree, commit or
	// tag, a delta's data, and what a delta rebuilds.
	gitMaxObject int64 = 64 << 20
	// gitMaxChain bounds an object rebuilt from deltas together with
	// the delta data and bases it is rebuilt from.
	gitMaxChain int64 = 256 << 20
	// gitMaxInflated bounds what the whole pack inflates to, deltas'
	// results included: the work of indexing it, whatever it compresses
	// to on the wire.
	gitMaxInflated int64 = 2 * MaxTreeSize
)

// Object types of the pack format (gitformat-pack).
const (
	packCommit   = 1
	packTree     = 2
	packBlob     = 3
	packTag      = 4
	packOFSDelta = 6
	packREFDelta = 7
)

// packChecker is the pack writer of a clone: it parses the pack on its
// way to go-git's writer (next) — object headers, inflated sizes, delta
// bases — and refuses it when the pack exceeds the limits above; it
// charges what is written to the fetch's disk account and stops when
// the fetch's context ends, recording why in stop.
type packChecker struct {
	ctx     context.Context
	next    io.WriteCloser
	disk    *diskAccount
	stop    *stopCause
	pipe    *io.PipeWriter
	checked chan packResult
	charged int64
}

// errPackEnded refuses bytes written after the pack's checksum.
var errPackEnded = refusedf("data after the end of the pack")

type packResult struct {
	objects uint32
	err     error
}

func newPackChecker(ctx context.Context, next io.WriteCloser, disk *diskAccount, stop *stopCause) *packChecker {
	pr, pw := io.Pipe()
	c := &packChecker{ctx: ctx, next: next, disk: disk, stop: stop, pipe: pw, checked: make(chan packResult, 1)}
	go func() {
		var n uint32
		err := recovered(func() (err error) {
			n, err = checkPack(pr)
			return err
		})
		if err == nil {
			pr.CloseWithError(errPackEnded) // a write past the end fails
		} else {
			pr.CloseWithError(err)
		}
		c.checked <- packResult{objects: n, err: err}
	}()
	return c
}

// Write passes p to the checker, then (once it has taken p) to go-git.
func (c *packChecker) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, c.stop.set(err)
	}
	if err := c.charge(int64(len(p))); err != nil {
		return 0, c.stop.set(err)
	}
	if _, err := c.pipe.Write(p); err != nil {
		return 0, c.stop.set(err)
	}
	return c.next.Write(p)
}

func (c *packChecker) charge(n int64) error {
	if err := c.disk.charge(n); err != nil {
		return err
	}
	c.charged += n
	return nil
}

// Close ends the pack, waits for the checker's verdict and lets go-git
// finish its index (of what the checker let through).
func (c *packChecker) Close() error {
	c.pipe.Close()
	res := <-c.checked
	closed := c.next.Close()
	switch {
	case errors.Is(res.err, ErrRefused):
		return c.stop.set(res.err)
	case res.err != nil:
		return res.err // the pack cut short: go-git's own error says why
	case closed != nil:
		return closed
	}
	// The index go-git wrote beside the pack: a fan-out table, then an
	// id, a CRC and an offset per object (gitformat-pack, version 2).
	return c.charge(8 + 256*4 + 28*int64(res.objects) + 40)
}

// packReader counts the bytes of the pack read so far (object offsets).
type packReader struct {
	r   *bufio.Reader
	off int64
}

func (p *packReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.off += int64(n)
	return n, err
}

func (p *packReader) ReadByte() (byte, error) {
	b, err := p.r.ReadByte()
	if err == nil {
		p.off++
	}
	return b, err
}

// packObject is what the check keeps of an object a delta may name as
// its base: its size once rebuilt, and its chain's (the object, the
// delta data and the bases it is rebuilt from).
type packObject struct {
	size, chain int64
}

type packCheck struct {
	in       *packReader
	z        io.ReadCloser
	objects  map[int64]packObject // by offset
	inflated int64
}

// checkPack reads a whole pack and returns its object count, or why it
// exceeds the limits or is no pack.
func checkPack(r io.Reader) (uint32, error) {
	c := &packCheck{in: &packReader{r: bufio.NewReaderSize(r, 64<<10)}}
	n, err := c.header()
	if err != nil {
		return 0, err
	}
	for range n {
		if err := c.object(); err != nil {
			return 0, err
		}
	}
	var sum [20]byte
	if _, err := io.ReadFull(c.in, sum[:]); err != nil {
		return 0, packError(c.in.off, fmt.Errorf("no checksum: %w", err))
	}
	if _, err := c.in.ReadByte(); err != io.EOF {
		return 0, errPackEnded
	}
	return n, nil
}

func (c *packCheck) header() (uint32, error) {
	var h [12]byte
	if _, err := io.ReadFull(c.in, h[:]); err != nil {
		return 0, packError(0, err)
	}
	version := binary.BigEndian.Uint32(h[4:8])
	if string(h[:4]) != "PACK" || version != 2 && version != 3 {
		return 0, refusedf("the server sent no git pack")
	}
	n := binary.BigEndian.Uint32(h[8:12])
	if int64(n) > int64(gitMaxObjects) {
		return 0, refusedf("the pack holds %d objects, more than the %d a module fetch takes", n, gitMaxObjects)
	}
	c.objects = make(map[int64]packObject, min(n, 1<<16))
	return n, nil
}

// object checks one object: its declared size before anything is
// inflated, then what it inflates to.
func (c *packCheck) object() error {
	at := c.in.off
	typ, size, err := c.objectHeader()
	if err != nil {
		return packError(at, err)
	}
	if size > gitMaxObject {
		return refusedf("the object at offset %d declares %d bytes, more than the %d a module fetch takes (go-git holds each object whole in memory)", at, size, gitMaxObject)
	}
	if err := c.spend(size); err != nil {
		return err
	}
	switch typ {
	case packCommit, packTree, packBlob, packTag:
		c.objects[at] = packObject{size: size, chain: size}
		return c.inflate(at, size)
	case packOFSDelta:
		return c.delta(at, size)
	case packREFDelta:
		return refusedf("the object at offset %d is a delta on an object named by id (REF_DELTA), which a clone asking for offset deltas never receives", at)
	}
	return refusedf("the object at offset %d has the unknown type %d", at, typ)
}

// spend counts n more bytes inflated or rebuilt.
func (c *packCheck) spend(n int64) error {
	if c.inflated += n; c.inflated > gitMaxInflated {
		return refusedf("the pack inflates to more than %d bytes (deltas' results included), more than a module fetch takes", gitMaxInflated)
	}
	return nil
}

// objectHeader reads an object's type and declared (inflated) size.
func (c *packCheck) objectHeader() (typ byte, size int64, err error) {
	b, err := c.in.ReadByte()
	if err != nil {
		return 0, 0, err
	}
	typ, size = b>>4&7, int64(b&15)
	for shift := 4; b&0x80 != 0; shift += 7 {
		if shift > 56 {
			return 0, 0, errors.New("an object size that overflows")
		}
		if b, err = c.in.ReadByte(); err != nil {
			return 0, 0, err
		}
		size |= int64(b&0x7f) << shift
	}
	return typ, size, nil
}

// delta checks an offset delta of size bytes at offset at: its base
// must be an earlier object; what it rebuilds, and its chain, are
// bounded.
func (c *packCheck) delta(at, size int64) error {
	rel, err := c.baseDistance()
	if err != nil {
		return packError(at, err)
	}
	base, ok := c.objects[at-rel]
	if rel <= 0 || !ok {
		return refusedf("the delta at offset %d names no earlier object as its base", at)
	}
	target, err := c.inflateDelta(at, size)
	if err != nil {
		return err
	}
	chain := base.chain + size + target
	if chain > gitMaxChain {
		return refusedf("the delta at offset %d rebuilds an object from %d bytes of deltas and bases, more than the %d a module fetch takes (go-git holds them all in memory at once)", at, chain, gitMaxChain)
	}
	c.objects[at] = packObject{size: target, chain: chain}
	return nil
}

// baseDistance reads an offset delta's distance back to its base.
func (c *packCheck) baseDistance() (int64, error) {
	b, err := c.in.ReadByte()
	if err != nil {
		return 0, err
	}
	rel := int64(b & 0x7f)
	for b&0x80 != 0 {
		if rel > 1<<48 {
			return 0, errors.New("a base offset that overflows")
		}
		if b, err = c.in.ReadByte(); err != nil {
			return 0, err
		}
		rel = (rel+1)<<7 | int64(b&0x7f)
	}
	return rel, nil
}

// zlib starts inflating the next zlib stream of the pack.
func (c *packCheck) zlib() error {
	if c.z == nil {
		z, err := zlib.NewReader(c.in)
		c.z = z
		return err
	}
	return c.z.(zlib.Resetter).Reset(c.in, nil)
}

// inflate inflates an object's data, which must be exactly size bytes.
func (c *packCheck) inflate(at, size int64) error {
	if err := c.zlib(); err != nil {
		return packError(at, err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(c.z, size+1))
	return checkInflated(at, size, n, err)
}

// inflateDelta inflates a delta's data (size bytes) and returns the size
// of the object it rebuilds, bounded before the rest is inflated.
func (c *packCheck) inflateDelta(at, size int64) (int64, error) {
	if err := c.zlib(); err != nil {
		return 0, packError(at, err)
	}
	r := &countingReader{r: io.LimitReader(c.z, size+1)}
	if _, err := readDeltaSize(r); err != nil { // the base's size
		return 0, packError(at, err)
	}
	target, err := readDeltaSize(r)
	if err != nil {
		return 0, packError(at, err)
	}
	if target > gitMaxObject {
		return 0, refusedf("the delta at offset %d rebuilds an object of %d bytes, more than the %d a module fetch takes (go-git holds each object whole in memory)", at, target, gitMaxObject)
	}
	if err := c.spend(target); err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, r)
	return target, checkInflated(at, size, r.n, err)
}

// checkInflated checks that an object's data inflated (n bytes, then
// err) to the size it declares.
func checkInflated(at, size, n int64, err error) error {
	switch {
	case err != nil:
		return packError(at, err)
	case n > size:
		return refusedf("the object at offset %d inflates to more than the %d bytes it declares", at, size)
	case n < size:
		return packError(at, fmt.Errorf("the object inflates to %d bytes, not the %d it declares", n, size))
	}
	return nil
}

// readDeltaSize reads a size of a delta's header (little-endian base 128).
func readDeltaSize(r io.Reader) (int64, error) {
	var b [1]byte
	var size int64
	for shift := 0; ; shift += 7 {
		if shift > 56 {
			return 0, errors.New("a delta size that overflows")
		}
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, err
		}
		size |= int64(b[0]&0x7f) << shift
		if b[0]&0x80 == 0 {
			return size, nil
		}
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// refusedf is an error refusing what an origin sent, for the reason given.
func refusedf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// packError is a pack that could not be read at offset at: corrupt, or
// cut short.
func packError(at int64, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("reading the git pack at offset %d: %w", at, err)
}
