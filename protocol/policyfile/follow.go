package policyfile

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Follow keeps the policy in step with its file until ctx ends: it
// reloads the file when it changes (Watch) and when the process receives
// SIGHUP. Without a watch (no inotify), SIGHUP still reloads, and that is
// logged as a warning.
func (f *File) Follow(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go f.reloadOnSignal(ctx, hup)
	if _, err := f.Watch(ctx); err != nil {
		f.log.Warn("the policy file is not watched: send SIGHUP to reload it", "file", f.path, "error", err.Error())
	}
}

// reloadOnSignal reloads the file on each signal sent to hup, until ctx
// ends.
func (f *File) reloadOnSignal(ctx context.Context, hup chan os.Signal) {
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			f.Reload("SIGHUP")
		}
	}
}
