// Package policyfile keeps a running server's policy in step
// with its file: it reads the file at start, reloads it when it changes
// (a watch on its directory, so editors' rename-writes and Kubernetes'
// ConfigMap symlink swaps are seen) or when asked (serve's SIGHUP), and
// never lets a file it cannot read or parse, or one caught while it is
// being written (complete.go), open the gate: the last good
// policy stays in force, and the error, with the file's line and column,
// is logged and kept in the Status the proxy shows on its page and in its
// metrics. The syntax and the decisions are convert/policy's.
//
// servercreds' certificate Reloader, which stats its files on TLS
// handshakes instead, stays a separate mechanism on purpose: the policy is
// read and its errors reported without waiting for a request, and never
// parsed on a request's path (docs/architecture.md, "Why two file
// reloaders").
package policyfile

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/convert/policy"
)

// File is a policy file and the policy in force from it.
type File struct {
	path string
	live *policy.Live
	log  *slog.Logger

	// Require, when set, is asked of each policy a reload would put in
	// force: an error refuses it (serve: a vulnerabilities block without
	// --vuln-db). OnReload, when set, is called on each reload asked for
	// (serve: check the vulnerability database too).
	Require  func(*policy.Policy) error
	OnReload func()

	mu     sync.Mutex // one reload at a time
	sum    [32]byte   // of the content in force
	status atomic.Pointer[Status]
}

// Status is what the page and the metrics say of the policy file.
type Status struct {
	File  string
	Rules int // of the policy in force
	// LoadedAt is when the policy in force was read; CheckedAt when the
	// file was last read (the last reload, good or not).
	LoadedAt, CheckedAt time.Time
	// Reloads counts the policies put in force after the first; Errors
	// the reloads that failed, the last good policy staying in force.
	Reloads, Errors uint64
	// Current is whether the policy in force is the file's content as
	// last read; LastError, when not, says why (file:line:column: …).
	Current   bool
	LastError string
	// LastErrorAt is when the last failed reload happened (zero: never).
	LastErrorAt time.Time
}

// Open reads and parses the policy file at path: serve does not start
// with a policy it cannot read. logger receives each reload (nil: none).
func Open(path string, logger *slog.Logger) (*File, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	src, err := read(path)
	if err != nil {
		return nil, err
	}
	p, err := policy.Parse(src, path)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	f := &File{path: path, live: policy.NewLive(p), log: logger, sum: sha256.Sum256(src)}
	f.status.Store(&Status{File: path, Rules: p.Rules(), LoadedAt: now, CheckedAt: now, Current: true})
	return f, nil
}

// read reads the file, a regular one of at most policy.MaxFileBytes.
func read(path string) ([]byte, error) {
	src, err := localfile.ReadBounded(path, policy.MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	return src, nil
}

// Live is the policy in force, for the proxy (proxy.Options.Policy).
func (f *File) Live() *policy.Live { return f.live }

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Status is a copy of the file's status.
func (f *File) Status() Status { return *f.status.Load() }

// Reload reads the file again, once it is still (stableRead), and puts
// its policy in force when it reads, parses and cannot be a file cut
// short (checkComplete); otherwise the policy in force stays and the
// error is logged and kept in the Status. A file whose content did not
// change is not parsed again. why ("SIGHUP", "file changed") goes in the
// log.
func (f *File) Reload(why string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.OnReload != nil {
		f.OnReload()
	}
	st := f.Status()
	src, err := stableRead(f.path)
	st.CheckedAt = time.Now()
	if err == nil {
		if sum := sha256.Sum256(src); sum == f.sum {
			st.Current, st.LastError = true, ""
			f.status.Store(&st)
			f.log.Info("policy file read: unchanged", "file", f.path, "why", why, "rules", st.Rules)
			return nil
		}
		var p *policy.Policy
		if p, err = policy.Parse(src, f.path); err == nil {
			err = checkComplete(f.path, f.live.Current(), p)
		}
		if err == nil {
			err = checkClientsKept(f.path, f.live.Current(), p)
		}
		if err == nil && f.Require != nil {
			err = f.Require(p)
		}
		if err == nil {
			f.live.Replace(p)
			f.sum = sha256.Sum256(src)
			st.Rules, st.LoadedAt, st.Reloads, st.Current, st.LastError = p.Rules(), st.CheckedAt, st.Reloads+1, true, ""
			f.status.Store(&st)
			f.log.Info("policy reloaded", "file", f.path, "why", why, "rules", p.Rules())
			return nil
		}
	}
	st.Errors++
	st.Current, st.LastError, st.LastErrorAt = false, err.Error(), st.CheckedAt
	f.status.Store(&st)
	f.log.Error("policy not reloaded: the last good policy stays in force", "file", f.path, "why", why, "error", err.Error())
	return err
}

// checkClientsKept refuses a reload that would turn client
// authentication on or off: whether serve asks clients for tokens, and
// signs the URLs it hands out, is decided when it starts (with client
// blocks or --auth-token-file), so the first client block added, or the
// last removed, needs a restart.
func checkClientsKept(path string, old, next *policy.Policy) error {
	switch {
	case old.HasClients() && !next.HasClients():
		return fmt.Errorf("%s: the new file has no client blocks, the one in force has: restart serve to stop asking clients for tokens", path)
	case !old.HasClients() && next.HasClients():
		return fmt.Errorf("%s: the new file adds client blocks to one without: restart serve to start asking clients for tokens", path)
	}
	return nil
}
