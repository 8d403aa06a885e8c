package policyfile

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// settle is how long the directory must be quiet after a change before
// the file is read: an editor's write-then-rename, or a ConfigMap's swap
// of its ..data link, is several events.
const settle = 100 * time.Millisecond

// Watch reloads the file whenever it changes, until ctx ends (WatchPath).
func (f *File) Watch(ctx context.Context) (wait func(), err error) {
	return WatchPath(ctx, f.path, "policy file", f.log, func(why string) { f.Reload(why) })
}

// WatchPath calls reload whenever the file at path changes, until ctx
// ends; what names the file in errors and logs ("policy file"). It
// watches the file's directory, not the file: an editor that writes a
// new file and renames it over the old one, and Kubernetes, which mounts
// a ConfigMap's keys as links through a "..data" link it swaps, replace
// the file rather than write it, and a watch on the file would end with
// its first version. When the path is a link into another directory,
// that directory is watched too (and followed when the link moves). The
// watch is set up when WatchPath returns; wait waits for it to end. It
// fails only when no watch can be set up. Every file serve reloads (the
// policy file, the events file) is watched this way.
func WatchPath(ctx context.Context, path, what string, log *slog.Logger, reload func(why string)) (wait func(), err error) {
	wt := &watched{path: path, what: what, log: log, reload: reload}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching the %s %s: %w", what, path, err)
	}
	dirs := map[string]bool{}
	if err := wt.watchDirs(w, dirs); err != nil {
		w.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.Close()
		wt.watchLoop(ctx, w, dirs)
	}()
	return func() { <-done }, nil
}

// watched is a file WatchPath watches.
type watched struct {
	path, what string
	log        *slog.Logger
	reload     func(why string)
}

// watchLoop reloads the file once its directory has been quiet for
// settle after a change that concerns it, until ctx ends.
func (f *watched) watchLoop(ctx context.Context, w *fsnotify.Watcher, dirs map[string]bool) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if f.concerns(ev.Name) {
				timer.Reset(settle)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			f.log.Warn("watching the "+f.what, "file", f.path, "error", err.Error())
			timer.Reset(settle) // events may have been lost (overflow): read the file
		case <-timer.C:
			f.reload("file changed")
			if err := f.watchDirs(w, dirs); err != nil {
				f.log.Warn("watching the "+f.what, "file", f.path, "error", err.Error())
			}
		}
	}
}

// watchDirs adds the directories to watch that are not watched yet: the
// path's, and that of the file it links to.
func (f *watched) watchDirs(w *fsnotify.Watcher, dirs map[string]bool) error {
	want := []string{filepath.Dir(f.path)}
	if target, err := filepath.EvalSymlinks(f.path); err == nil {
		want = append(want, filepath.Dir(target))
	}
	for _, d := range want {
		if dirs[d] {
			continue
		}
		if err := w.Add(d); err != nil {
			return fmt.Errorf("watching the %s's directory %s: %w", f.what, d, err)
		}
		dirs[d] = true
	}
	return nil
}

// concerns says whether a change to name may have changed the file: the
// file itself, the file its path links to, or a ConfigMap's "..data"
// links and directories.
func (f *watched) concerns(name string) bool {
	base := filepath.Base(name)
	if base == filepath.Base(f.path) || strings.HasPrefix(base, "..") {
		return true
	}
	if target, err := filepath.EvalSymlinks(f.path); err == nil && base == filepath.Base(target) {
		return true
	}
	return false
}
