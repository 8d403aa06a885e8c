// Package notify receives registry notifications: CNCF Distribution's
// notifications, Harbor's webhooks and zot's CloudEvents, authenticated
// by a secret the operator shares with the registry, and turns the
// repositories they name into invalidations of what the proxy cached of
// them, batched, bounded and told to the other replicas of a fleet
// (docs/notifications.md).
package notify

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Path is where serve receives notifications.
const Path = "/notifications/registry"

// MaxBody bounds a notification's body.
const MaxBody = 1 << 20

// Options configure a Receiver.
type Options struct {
	// Secret authenticates senders: the Authorization header is
	// "Bearer SECRET", SECRET itself (Harbor's auth header as set), or
	// Basic credentials whose password is SECRET (zot's sink
	// credentials).
	Secret []byte
	// Scope names the repositories (oci.Reference.Name) of the proxy's
	// registries a change names; none for a repository the proxy does
	// not read. host is "" when the notification names no host.
	Scope func(host, repository string) []string
	// Apply drops what the proxy cached of the named repositories (all:
	// of every repository). It is called from one goroutine, at most
	// once per Interval.
	Apply func(names []string, all bool)
	// Fleet, when set, tells the other replicas (and hears them).
	Fleet Fleet
	// Interval is the least time between two Applys (default 250ms):
	// what a flood of notifications costs is at most one batch per
	// Interval.
	Interval time.Duration
	// MaxPending bounds the repositories waiting for the next batch
	// (default 1024); beyond it the batch drops every repository's.
	MaxPending int
	// AllInterval is the least time between two batches that drop every
	// repository's (default 10s): MaxPending is overflowed at will by
	// anyone who may notify (a template's placeholders take any name), and
	// each overflow makes every repository's next request cold. The first
	// is applied at once; names notified while a later one waits are
	// covered by it.
	AllInterval time.Duration
	// ReadTimeout bounds the time a notification's body takes to arrive
	// (default 10s): the server sets no deadline on bodies, so a sender
	// trickling one would hold its connection for ever.
	ReadTimeout time.Duration
	Logger      *slog.Logger
}

// Fleet carries batches between replicas (a Redis channel).
type Fleet interface {
	// Publish sends msg to every subscriber, this replica's included.
	Publish(ctx context.Context, msg []byte) error
	// Subscribe calls fn with every message published until ctx ends,
	// reconnecting as needed.
	Subscribe(ctx context.Context, fn func(msg []byte))
}

// Receiver is the notifications endpoint and its batches.
type Receiver struct {
	opts Options
	id   string // this replica, in fleet messages

	mu      sync.Mutex
	pending map[string]bool // name → to be told to the fleet
	all     bool
	tellAll bool
	wake    chan struct{}

	batches atomic.Int64
}

// New makes a Receiver; Start runs its batches.
func New(opts Options) (*Receiver, error) {
	if len(opts.Secret) < MinSecret {
		return nil, errors.New("the notifications secret must be at least 16 bytes")
	}
	if opts.Scope == nil || opts.Apply == nil {
		return nil, errors.New("notify: Scope and Apply are required")
	}
	if opts.Interval <= 0 {
		opts.Interval = 250 * time.Millisecond
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = 1024
	}
	if opts.AllInterval <= 0 {
		opts.AllInterval = 10 * time.Second
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Receiver{opts: opts, id: randomID(), pending: map[string]bool{}, wake: make(chan struct{}, 1)}, nil
}

// MinSecret is the shortest secret accepted.
const MinSecret = 16

// Batches is how many batches were applied (tests, metrics).
func (r *Receiver) Batches() int64 { return r.batches.Load() }

// ServeHTTP receives one notification: 401 unless authenticated (before
// the body is read, and without waiting for it), 408 for a body that
// takes longer than ReadTimeout, 413 for one over MaxBody or more than
// MaxEvents events, 400 for one none of the formats reads, 202 once its
// repositories wait for the next batch.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rc := http.NewResponseController(w)
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		refuseUnread(w, req, rc, http.StatusMethodNotAllowed, "notifications are POSTed")
		return
	}
	if !r.authenticated(req.Header.Get("Authorization")) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="oci-tofu notifications"`)
		refuseUnread(w, req, rc, http.StatusUnauthorized, "a notification needs the secret configured with --notifications-secret-file")
		return
	}
	_ = rc.SetReadDeadline(time.Now().Add(r.opts.ReadTimeout)) // not supported: a test's recorder
	body, err := readBounded(w, req)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.Is(err, errTooLarge) || errors.As(err, &tooLarge):
		answer(w, http.StatusRequestEntityTooLarge, errTooLarge.Error())
		return
	case err != nil:
		closeConnection(w, req)
		answer(w, http.StatusRequestTimeout, "the notification's body did not arrive in time")
		return
	}
	changes, err := Parse(req.Header, body)
	var br *BadRequestError
	switch {
	case errors.Is(err, ErrTooMany):
		answer(w, http.StatusRequestEntityTooLarge, err.Error())
		return
	case errors.As(err, &br):
		answer(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		answer(w, http.StatusBadRequest, "bad notification")
		return
	}
	n := r.accept(changes)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	json.NewEncoder(w).Encode(map[string]int{"events": len(changes), "repositories": n})
}

func answer(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// readBounded reads the body, at most MaxBody bytes.
func readBounded(w http.ResponseWriter, req *http.Request) ([]byte, error) {
	if req.ContentLength > MaxBody {
		return nil, errTooLarge
	}
	return io.ReadAll(http.MaxBytesReader(w, req.Body, MaxBody))
}

// refuseUnread answers a request whose body is not to be read, and
// closes its HTTP/1 connection without waiting for the body: the server
// would otherwise read what is left of it (up to 256 KiB, as slowly as
// it is sent) before answering or reusing the connection.
func refuseUnread(w http.ResponseWriter, req *http.Request, rc *http.ResponseController, status int, msg string) {
	closeConnection(w, req)
	answer(w, status, msg)
	_ = rc.Flush()
	_ = rc.SetReadDeadline(time.Now())
}

// closeConnection closes an HTTP/1 connection after the answer. An
// HTTP/2 one is left open: its other streams (a load balancer's, of
// other clients) are not this request's, and its body ends with its
// stream.
func closeConnection(w http.ResponseWriter, req *http.Request) {
	if req.ProtoMajor < 2 {
		w.Header().Set("Connection", "close")
	}
}

var errTooLarge = errors.New("the notification is larger than 1 MiB")

// authenticated compares the header with each accepted form, in time
// independent of where they differ.
func (r *Receiver) authenticated(header string) bool {
	secret := r.opts.Secret
	ok := subtle.ConstantTimeCompare([]byte(header), secret)
	if token, found := strings.CutPrefix(header, "Bearer "); found {
		ok |= subtle.ConstantTimeCompare([]byte(token), secret)
	}
	if enc, found := strings.CutPrefix(header, "Basic "); found {
		if dec, err := base64.StdEncoding.DecodeString(enc); err == nil {
			if _, pass, found := strings.Cut(string(dec), ":"); found {
				ok |= subtle.ConstantTimeCompare([]byte(pass), secret)
			}
		}
	}
	return ok == 1
}

// MaxRepository bounds the repository names (and host names) a
// notification's changes may carry: OCI registries keep a repository's
// name to 255 characters (Distribution refuses longer), and matching a
// name against the templates costs about the square of its length.
const MaxRepository = 255

// accept adds the repositories changes name, in the proxy's scope, to
// the next batch; it returns how many there were.
func (r *Receiver) accept(changes []Change) int {
	var names []string
	repos := 0
	for _, c := range changes {
		if len(c.Repository) > MaxRepository || len(c.Host) > MaxRepository {
			continue // no registry holds it: not worth matching against the templates
		}
		in := r.opts.Scope(c.Host, c.Repository)
		repos += len(in)
		for _, n := range in {
			names = append(names, invalidation(n, c))
		}
	}
	if len(names) > 0 {
		r.add(names, false, true)
	}
	return repos
}

// invalidation is what change c drops of repository name (as
// store.Invalidate reads it): "name:tag", the tag list and what that tag
// named, for a tag pushed or deleted; "name:", the tag list alone, for a
// push by digest, which moves no tag; name, the list and what every tag
// named, for a delete by digest, which may have removed any of them.
func invalidation(name string, c Change) string {
	switch {
	case names.ValidTag(c.Tag):
		return name + ":" + c.Tag
	case c.Deleted:
		return name
	}
	return name + ":"
}

// add puts names (or all) into the next batch; tell says the fleet is
// to hear of them.
func (r *Receiver) add(names []string, all, tell bool) {
	r.mu.Lock()
	for _, n := range names {
		if all || r.all {
			break // covered: the batch drops every repository's
		}
		if len(r.pending) >= r.opts.MaxPending {
			all = true
			break
		}
		r.pending[n] = r.pending[n] || tell
	}
	if all || r.all {
		r.all, r.tellAll = true, r.tellAll || tell
		clear(r.pending)
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// take empties the batch.
func (r *Receiver) take() (names, tell []string, all, tellAll bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, t := range r.pending {
		names = append(names, n)
		if t {
			tell = append(tell, n)
		}
	}
	all, tellAll = r.all, r.tellAll
	clear(r.pending)
	r.all, r.tellAll = false, false
	return names, tell, all, tellAll
}

// Start applies batches until ctx ends, one per Interval at most, and
// hears the fleet's.
func (r *Receiver) Start(ctx context.Context) {
	if r.opts.Fleet != nil {
		go r.opts.Fleet.Subscribe(ctx, r.heard)
	}
	go r.run(ctx)
}

func (r *Receiver) run(ctx context.Context) {
	var lastAll time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		if r.allPending() && !lastAll.IsZero() && !sleep(ctx, time.Until(lastAll.Add(r.opts.AllInterval))) {
			return
		}
		names, tell, all, tellAll := r.take()
		if all {
			lastAll = time.Now()
		}
		if len(names) > 0 || all {
			r.opts.Apply(names, all)
			r.batches.Add(1)
		}
		if r.opts.Fleet != nil && (len(tell) > 0 || tellAll) {
			r.tell(ctx, tell, tellAll)
		}
		if !sleep(ctx, r.opts.Interval) {
			return
		}
	}
}

// allPending says the next batch drops every repository's.
func (r *Receiver) allPending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.all
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
