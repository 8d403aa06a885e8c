package servercreds

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// DefaultReloadInterval is how often a Reloader looks at its files at
// most: one stat of each file per interval, on a handshake.
const DefaultReloadInterval = time.Second

// A Reloader serves a certificate and key read from files and reads them
// again when they change (cert-manager and the kubelet rewrite a Secret
// volume by swapping a symbolic link, which changes what the paths
// resolve to). It looks at the files on a TLS handshake, at most once per
// Interval. A new pair that does not load (half written, or a key that
// does not match) is logged, reported to OnReload, and the pair in use is
// kept; it is read again when the files change again. Connections already
// open keep the certificate they were made with.
//
// It does not share protocol/policyfile's directory watch on purpose:
// looking on the handshake that serves the pair needs no goroutine and no
// inotify watch, cannot miss a change when events are lost, and reads and
// refuses a pair where it would be served (docs/architecture.md, "Why two
// file reloaders").
type Reloader struct {
	certFile, keyFile string
	// Interval is the least time between two looks at the files
	// (default DefaultReloadInterval).
	Interval time.Duration
	// Logger receives a line for each reload (default slog.Default()).
	Logger *slog.Logger
	// OnReload, when set, is told of each reload: nil when the new pair
	// is served, the error when it was refused.
	OnReload func(err error)

	mu      sync.Mutex
	cert    *tls.Certificate
	lastErr error     // of the last reload, nil when it succeeded
	stamp   fileStamp // of the files when cert (or the last refused pair) was read
	checked time.Time
	now     func() time.Time
}

// fileStamp identifies the content of the two files cheaply: a change
// of any field means the files were replaced.
type fileStamp struct {
	cert, key stamp
}

type stamp struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

// NewReloader reads the certificate and key (a *FileError names a file
// that cannot be read) and returns a Reloader serving them.
func NewReloader(certFile, keyFile string) (*Reloader, error) {
	r := &Reloader{certFile: certFile, keyFile: keyFile, now: time.Now}
	st := r.stat()
	cert, err := LoadCertificate(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	r.cert, r.stamp, r.checked = &cert, st, r.now()
	return r, nil
}

// Certificate is the pair served now.
func (r *Reloader) Certificate() *tls.Certificate {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cert
}

// GetCertificate is tls.Config's: the current pair, after reading the
// files again when they changed.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	interval := r.Interval
	if interval <= 0 {
		interval = DefaultReloadInterval
	}
	// A clock set back counts as time passed, so files are never left unread.
	if now := r.now(); now.Sub(r.checked) >= interval || now.Before(r.checked) {
		r.checked = now
		r.reloadIfChangedLocked()
	}
	return r.cert, nil
}

// reloadIfChangedLocked reads the pair again when the files' stamps
// changed. r.mu is held: handshakes wait for one read of two small files.
func (r *Reloader) reloadIfChangedLocked() {
	st := r.stat()
	if st == r.stamp {
		return
	}
	r.stamp = st
	cert, err := LoadCertificate(r.certFile, r.keyFile)
	log := r.Logger
	if log == nil {
		log = slog.Default()
	}
	r.lastErr = err
	if err != nil {
		log.Error("the TLS certificate files changed but do not load: serving the previous certificate", "cert", r.certFile, "key", r.keyFile, "error", err)
	} else {
		r.cert = &cert
		log.Info("TLS certificate reloaded", "cert", r.certFile, "subject", cert.Leaf.Subject.String(), "serial", cert.Leaf.SerialNumber.String(),
			"not_after", cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if r.OnReload != nil {
		r.OnReload(err)
	}
}

// stat stamps both files (a missing file stamps as zero).
func (r *Reloader) stat() fileStamp {
	return fileStamp{cert: stampOf(r.certFile), key: stampOf(r.keyFile)}
}

func stampOf(p string) stamp {
	fi, err := os.Stat(p)
	if err != nil {
		return stamp{}
	}
	s := stamp{size: fi.Size(), mtime: fi.ModTime()}
	s.dev, s.ino = devIno(fi)
	return s
}

// Usable is nil while the certificate served is valid at now, or says
// why clients will refuse it (expired, or not valid yet) and, when the
// files' last reload failed, why the files did not replace it. It is a
// readiness condition (health.Condition): a replica serving a
// certificate clients refuse is taken out of service, while a valid one
// whose renewal did not load yet is not (docs/proxy.md, "Probes").
func (r *Reloader) Usable(now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	leaf := r.cert.Leaf
	var why string
	switch {
	case leaf == nil:
		return nil
	case now.After(leaf.NotAfter):
		why = "the certificate served expired at " + leaf.NotAfter.UTC().Format(time.RFC3339)
	case now.Before(leaf.NotBefore):
		why = "the certificate served is not valid before " + leaf.NotBefore.UTC().Format(time.RFC3339)
	default:
		return nil
	}
	if r.lastErr != nil {
		return fmt.Errorf("%s; the files' last reload failed: %w", why, r.lastErr)
	}
	return fmt.Errorf("%s (%s): give it a renewed certificate", why, r.certFile)
}

// ReloadingServerConfig is ServerConfig serving r's current pair.
func ReloadingServerConfig(r *Reloader) *tls.Config {
	c := ServerConfig(tls.Certificate{})
	c.Certificates = nil
	c.GetCertificate = r.GetCertificate
	return c
}
