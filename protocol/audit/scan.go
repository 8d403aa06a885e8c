package audit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fastjson"
)

// Reading the trail back: files are read in chunks by as many workers as
// there are CPUs, each chunk cut at a line's end, each worker tallying
// into its own Tally (merged at the end), so memory is bounded by the
// chunks in flight and the tally, never by the file.

// MaxLine bounds one event's line; a longer line is skipped (counted as
// malformed), never buffered whole.
const MaxLine = 64 << 10

// chunkSize is how much of a file one worker parses at a time.
const chunkSize = 4 << 20

// chunkPool holds the chunks' buffers: a worker is done with a chunk
// when it has tallied it (the strings it keeps are copies).
var chunkPool = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// Record is the part of an event a tally reads.
type Record struct {
	Time                                             time.Time
	Event, Outcome                                   string
	Client, Kind, Address, Version, Platform, Source string
	Repository, Identity                             string
}

// Files is the audit files path names: the file itself and the files it
// was rotated into (lumberjack names them PATH-without-extension-TIME.ext),
// oldest first. A directory names every *.log and *.jsonl file in it.
func Files(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err == nil && fi.IsDir() {
		var out []string
		for _, pat := range []string{"*.log", "*.jsonl", "*.json"} {
			m, _ := filepath.Glob(filepath.Join(path, pat))
			out = append(out, m...)
		}
		sort.Strings(out)
		return out, nil
	}
	ext := filepath.Ext(path)
	rotated, _ := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	sort.Strings(rotated)
	if err == nil {
		rotated = append(rotated, path)
	}
	if len(rotated) == 0 {
		return nil, fmt.Errorf("audit log %s: %w", path, os.ErrNotExist)
	}
	return rotated, nil
}

// Scan tallies the events of files into t (which decides what it keeps),
// reading them with every CPU.
func Scan(ctx context.Context, files []string, t *Tally) error {
	workers := runtime.GOMAXPROCS(0)
	chunks := make(chan *[]byte, workers)
	tallies := make([]*Tally, workers)
	var wg sync.WaitGroup
	for i := range tallies {
		tallies[i] = t.fresh()
		wg.Add(1)
		go func(w *Tally) {
			defer wg.Done()
			var p fastjson.Parser
			for c := range chunks {
				w.lines(&p, *c)
				chunkPool.Put(c)
			}
		}(tallies[i])
	}
	var long atomic.Int64
	err := readChunks(ctx, files, chunks, &long)
	close(chunks)
	wg.Wait()
	for _, w := range tallies {
		t.merge(w)
	}
	t.Malformed += long.Load()
	return err
}

// readChunks sends each file's content in chunks ending at a line's end.
func readChunks(ctx context.Context, files []string, out chan<- *[]byte, long *atomic.Int64) error {
	for _, name := range files {
		if err := readFileChunks(ctx, name, out, long); err != nil {
			return err
		}
	}
	return nil
}

// readFileChunks sends one file's chunks; a line longer than a chunk is
// skipped, counted in long.
func readFileChunks(ctx context.Context, name string, out chan<- *[]byte, long *atomic.Int64) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, chunkSize)
	var carry []byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := chunkPool.Get().(*[]byte)
		buf := (*chunk)[:chunkSize]
		n := copy(buf, carry)
		m, err := io.ReadFull(r, buf[n:])
		buf = buf[:n+m]
		end := bytes.LastIndexByte(buf, '\n')
		switch {
		case err != nil: // the file's end: its last line, even unterminated
			if len(buf) > 0 {
				*chunk = buf
				out <- chunk
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			return fmt.Errorf("audit log %s: %w", name, err)
		case end < 0: // one line longer than a chunk: skip to its end
			carry = nil
			chunkPool.Put(chunk)
			long.Add(1)
			if !skipLine(r) {
				return nil
			}
			continue
		}
		carry = append(carry[:0], buf[end+1:]...)
		*chunk = buf[:end+1]
		out <- chunk
	}
}

// skipLine reads past the end of the current line; false at the file's
// end.
func skipLine(r *bufio.Reader) bool {
	for {
		_, err := r.ReadSlice('\n')
		switch {
		case err == nil:
			return true
		case !errors.Is(err, bufio.ErrBufferFull):
			return false
		}
	}
}

// lines tallies the events of a chunk of whole lines.
func (t *Tally) lines(p *fastjson.Parser, chunk []byte) {
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		line := chunk
		if i >= 0 {
			line, chunk = chunk[:i], chunk[i+1:]
		} else {
			chunk = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(line) > MaxLine {
			t.Malformed++
			continue
		}
		rec, ok := parseRecord(p, t.interned, line)
		if !ok {
			t.Malformed++
			continue
		}
		t.add(&rec)
	}
}

// parseRecord reads the fields a tally uses from one line; ok is false
// for a line that is not an event of SchemaVersion.
func parseRecord(p *fastjson.Parser, in interner, line []byte) (Record, bool) {
	v, err := p.ParseBytes(line)
	if err != nil || v.GetInt("v") != SchemaVersion {
		return Record{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, string(v.GetStringBytes("time")))
	if err != nil {
		return Record{}, false
	}
	return Record{
		Time: at, Event: in.str(v, "event"), Outcome: in.str(v, "outcome"), Client: in.str(v, "client"),
		Kind: in.str(v, "kind"), Address: in.str(v, "address"), Version: in.str(v, "version"),
		Platform: in.str(v, "platform"), Source: in.str(v, "source"), Repository: in.str(v, "repository"),
		Identity: in.str(v, "identity"),
	}, true
}

// interner hands out one string for each distinct value read, so that
// millions of events naming the same few addresses allocate each once.
// It holds at most maxInterned values; past that, values are copied.
type interner map[string]string

const maxInterned = 1 << 16

func (in interner) str(v *fastjson.Value, key string) string {
	b := v.GetStringBytes(key)
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(in) < maxInterned {
		in[s] = s
	}
	return s
}

// ScanPaths tallies into t the audit files of each path (FilesOf), as
// Scan does, and returns those files.
func ScanPaths(ctx context.Context, paths []string, t *Tally) ([]string, error) {
	files, err := FilesOf(paths)
	if err != nil {
		return nil, err
	}
	return files, Scan(ctx, files, t)
}

// FilesOf is the audit files of each path (Files), in the order given.
func FilesOf(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fs, err := Files(p)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}
