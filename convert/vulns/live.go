package vulns

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultCheckEvery is how often Live checks its directory's Fingerprint.
const DefaultCheckEvery = 30 * time.Second

// Live is the database of a directory kept in step with it, for a server
// (serve --vuln-db): Current is the database last opened, and at most
// every CheckEvery one Current call starts, in the background, a check of
// the directory's Fingerprint (its index files, a few MiB read and
// hashed, and a stat of each entry file they name) and, when it changed,
// an Open. A database is taken whole or not at all: one that does not
// open, or skips an entry its index names (missing, half written,
// invalid), is logged and counted in Status, the one in force stays, and
// the next check tries again. Readers never wait for either.
type Live struct {
	dir        string
	checkEvery time.Duration
	log        *slog.Logger
	now        func() time.Time

	db       atomic.Pointer[DB]
	next     atomic.Int64 // unix nanoseconds of the next check
	checking sync.Mutex
	reloads  atomic.Uint64
	status   atomic.Pointer[LiveStatus]

	watchMu  sync.Mutex
	replaced chan struct{} // closed when the next database is put in force
}

// LiveStatus is what the metrics and the page say of the database's
// reloads.
type LiveStatus struct {
	Dir string
	// LoadedAt is when the database in force was opened; CheckedAt when
	// the directory was last checked.
	LoadedAt, CheckedAt time.Time
	// Reloads counts the databases put in force after the first; Errors
	// the checks that found a changed directory whose database did not
	// open whole, the one in force staying.
	Reloads, Errors uint64
	// Current is whether the database in force is the directory's as
	// last checked; LastError, when not, says why.
	Current     bool
	LastError   string
	LastErrorAt time.Time
}

// OpenLive opens the database in dir, which must open (a server does not
// start without the database its policy needs). checkEvery ≤ 0 is
// DefaultCheckEvery; logger nil logs nothing.
func OpenLive(dir string, checkEvery time.Duration, logger *slog.Logger) (*Live, error) {
	db, err := openWhole(dir)
	if err != nil {
		return nil, err
	}
	if checkEvery <= 0 {
		checkEvery = DefaultCheckEvery
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &Live{dir: dir, checkEvery: checkEvery, log: logger, now: time.Now, replaced: make(chan struct{})}
	l.db.Store(db)
	now := l.now()
	l.status.Store(&LiveStatus{Dir: dir, LoadedAt: now, CheckedAt: now, Current: true})
	l.next.Store(now.Add(checkEvery).UnixNano())
	return l, nil
}

// openWhole is Open, refusing a database that skipped an entry its index
// names (missing, half written, not valid OSV): a server takes a
// database whole or not at all, as a reload in the middle of an update
// would otherwise put a database in force without the entries not yet
// written — and a policy's deny rules would not see them.
func openWhole(dir string) (*DB, error) {
	db, err := Open(dir)
	if err != nil {
		return nil, err
	}
	if len(db.skipped) > 0 {
		return nil, notWhole(dir, db.skipped)
	}
	return db, nil
}

// notWhole is the error of a database that skipped entries, naming the
// first few: it is logged at each check and shown on the page.
func notWhole(dir string, skipped []Skipped) error {
	const named = 3
	parts := make([]string, 0, named)
	for _, s := range skipped[:min(len(skipped), named)] {
		parts = append(parts, s.String())
	}
	more := ""
	if len(skipped) > named {
		more = fmt.Sprintf("; and %d more", len(skipped)-named)
	}
	return fmt.Errorf("vulnerability database %s is not whole: %d entries its index names could not be read (%s%s)", dir, len(skipped), strings.Join(parts, "; "), more)
}

// Dir is the database's directory.
func (l *Live) Dir() string { return l.dir }

// Status is a copy of the reloads' status.
func (l *Live) Status() LiveStatus { return *l.status.Load() }

// Reloads counts the databases put in force after the first.
func (l *Live) Reloads() uint64 { return l.reloads.Load() }

// Generation counts the databases put in force after the first, as
// Reloads, and starts a check when one is due, as Current: what was
// built from the database of one generation (the proxy's documents) is
// not served under a later one. A database is put in force before its
// generation is counted, so what is read after Generation returned n
// is of generation n or a later one. 0 for a nil Live.
func (l *Live) Generation() uint64 {
	if l == nil {
		return 0
	}
	l.Current()
	return l.reloads.Load()
}

// Current is the database in force (nil for a nil Live); it starts a
// check when one is due.
func (l *Live) Current() *DB {
	if l == nil {
		return nil
	}
	if next := l.next.Load(); l.now().UnixNano() >= next && l.next.CompareAndSwap(next, l.now().Add(l.checkEvery).UnixNano()) {
		go l.Check()
	}
	return l.db.Load()
}

// Watch is the database in force (as Current, without starting a
// check) with a channel closed once a later one is put in force: what a
// watcher of reloads (serve's events) waits on. The channel may close
// with the same database still in force (a reload seen between the two
// reads): compare the databases. Nil for a nil Live.
func (l *Live) Watch() (db *DB, replaced <-chan struct{}) {
	if l == nil {
		return nil, nil
	}
	l.watchMu.Lock()
	defer l.watchMu.Unlock()
	return l.db.Load(), l.replaced
}

// announce wakes the watchers of the database just put in force.
func (l *Live) announce() {
	l.watchMu.Lock()
	defer l.watchMu.Unlock()
	close(l.replaced)
	l.replaced = make(chan struct{})
}

// Check reads the directory's Fingerprint now and opens the database
// again when it changed: what Current starts, and what a policy reload
// calls. It reports whether a new database is in force. A database that
// does not open whole leaves the one in force, logged and counted in
// Status; the next check tries again.
func (l *Live) Check() bool {
	if !l.checking.TryLock() {
		return false
	}
	defer l.checking.Unlock()
	st := l.Status()
	st.CheckedAt = l.now()
	fp, err := Fingerprint(l.dir)
	if err == nil && fp == l.db.Load().Fingerprint() {
		st.Current, st.LastError = true, ""
		l.status.Store(&st)
		return false
	}
	var db *DB
	if err == nil {
		db, err = openWhole(l.dir)
	}
	if err != nil {
		st.Errors++
		st.Current, st.LastError, st.LastErrorAt = false, err.Error(), st.CheckedAt
		l.status.Store(&st)
		l.log.Error("vulnerability database not reloaded: the one in force stays", "dir", l.dir, "error", err.Error())
		return false
	}
	l.db.Store(db)
	l.reloads.Add(1)
	l.announce()
	st.Reloads++
	st.LoadedAt, st.Current, st.LastError = st.CheckedAt, true, ""
	l.status.Store(&st)
	l.log.Info("vulnerability database reloaded", "dir", l.dir, "entries", db.Entries(), "modified", db.Modified())
	return true
}
