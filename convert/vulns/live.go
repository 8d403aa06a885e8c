package vulns

import (
	"log/slog"
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
// hashed) and, when it changed, an Open; a database that does not open
// is logged and the one in force stays. Readers never wait for either.
type Live struct {
	dir        string
	checkEvery time.Duration
	log        *slog.Logger
	now        func() time.Time

	db       atomic.Pointer[DB]
	next     atomic.Int64 // unix nanoseconds of the next check
	checking sync.Mutex
	reloads  atomic.Uint64
}

// OpenLive opens the database in dir, which must open (a server does not
// start without the database its policy needs). checkEvery ≤ 0 is
// DefaultCheckEvery; logger nil logs nothing.
func OpenLive(dir string, checkEvery time.Duration, logger *slog.Logger) (*Live, error) {
	db, err := Open(dir)
	if err != nil {
		return nil, err
	}
	if checkEvery <= 0 {
		checkEvery = DefaultCheckEvery
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &Live{dir: dir, checkEvery: checkEvery, log: logger, now: time.Now}
	l.db.Store(db)
	l.next.Store(l.now().Add(checkEvery).UnixNano())
	if len(db.skipped) > 0 {
		logger.Warn("vulnerability database: entries skipped", "dir", dir, "skipped", len(db.skipped), "first", db.skipped[0].String())
	}
	return l, nil
}

// Dir is the database's directory.
func (l *Live) Dir() string { return l.dir }

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

// Check reads the directory's Fingerprint now and opens the database
// again when it changed: what Current starts, and what a policy reload
// calls. It reports whether a new database is in force.
func (l *Live) Check() bool {
	if !l.checking.TryLock() {
		return false
	}
	defer l.checking.Unlock()
	fp, err := Fingerprint(l.dir)
	if err != nil {
		l.log.Error("vulnerability database: the one in force stays", "dir", l.dir, "error", err.Error())
		return false
	}
	if fp == l.db.Load().Fingerprint() {
		return false
	}
	db, err := Open(l.dir)
	if err != nil {
		l.log.Error("vulnerability database not reloaded: the one in force stays", "dir", l.dir, "error", err.Error())
		return false
	}
	l.db.Store(db)
	l.reloads.Add(1)
	l.log.Info("vulnerability database reloaded", "dir", l.dir, "entries", db.Entries(), "modified", db.Modified(), "skipped", len(db.skipped))
	return true
}
