// Package report is how a command's work reports itself: progress lines
// and warnings for humans on one writer, the result (human text, or JSON
// for CI) on another, nothing but errors with Quiet. The CLI makes one
// Reporter per command from --quiet and --json; the libraries it calls
// (convert/publish, …) write their own lines to it.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Reporter prints progress and results according to Quiet and JSON.
type Reporter struct {
	// Out gets the result, Err the progress, information and warnings.
	Out, Err io.Writer
	// Quiet prints nothing but errors (--quiet), JSON the result as JSON
	// and nothing on Err (--json).
	Quiet, JSON bool
	// TTY is whether Err is a terminal: only then is progress drawn.
	TTY bool

	mu        sync.Mutex
	lastPrint time.Time
}

// Infof prints a human line to Err unless Quiet or JSON.
func (r *Reporter) Infof(format string, args ...any) {
	if r.Quiet || r.JSON {
		return
	}
	fmt.Fprintf(r.Err, format+"\n", args...)
}

// Warn prints warnings about subject to Err, for humans (JSON output
// carries them in its result).
func (r *Reporter) Warn(subject string, warnings []string) {
	if r.Quiet || r.JSON {
		return
	}
	for _, w := range warnings {
		fmt.Fprintf(r.Err, "warning: %s: %s\n", subject, w)
	}
}

// Progress returns a byte-progress callback drawn on a terminal, or nil.
func (r *Reporter) Progress(what string) func(done, total int64) {
	if r.Quiet || r.JSON || !r.TTY {
		return nil
	}
	return func(done, total int64) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if done < total && time.Since(r.lastPrint) < 100*time.Millisecond {
			return
		}
		r.lastPrint = time.Now()
		fmt.Fprintf(r.Err, "\r%s %6.1f / %.1f MiB", what, float64(done)/(1<<20), float64(total)/(1<<20))
		if done >= total {
			fmt.Fprintln(r.Err)
		}
	}
}

// Result prints v as JSON with JSON, or the human text otherwise.
func (r *Reporter) Result(v any, human string) error {
	if r.JSON {
		enc := json.NewEncoder(r.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	if !r.Quiet {
		fmt.Fprintln(r.Out, human)
	}
	return nil
}

// PushedLine is a push's one-line report.
func PushedLine(ref oci.Reference, res oci.PushResult) string {
	if res.UpToDate {
		return fmt.Sprintf("%s is up to date (%s)", ref, res.Root.Digest)
	}
	return fmt.Sprintf("pushed %s@%s (%d uploaded, %d already present)", ref, res.Root.Digest, res.Uploaded, res.Skipped)
}
