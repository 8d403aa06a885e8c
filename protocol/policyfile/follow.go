package policyfile

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Follow keeps the policy in step with its file until ctx ends: it
// reloads the file when it changes (Watch) and when the process receives
// SIGHUP. Without a watch (no inotify), SIGHUP still reloads, and that is
// logged as a warning.
func (f *File) Follow(ctx context.Context) {
	FollowPath(ctx, f.path, "policy file", f.log, func(why string) { f.Reload(why) })
}

// FollowPath calls reload whenever the file at path changes (WatchPath)
// and when the process receives SIGHUP, until ctx ends; what names the
// file in logs. Without a watch, SIGHUP still reloads, and that is
// logged as a warning.
func FollowPath(ctx context.Context, path, what string, log *slog.Logger, reload func(why string)) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go reloadOnSignal(ctx, hup, reload)
	if _, err := WatchPath(ctx, path, what, log, reload); err != nil {
		log.Warn("the "+what+" is not watched: send SIGHUP to reload it", "file", path, "error", err.Error())
	}
}

// reloadOnSignal calls reload on each signal sent to hup, until ctx
// ends.
func reloadOnSignal(ctx context.Context, hup chan os.Signal, reload func(why string)) {
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			reload("SIGHUP")
		}
	}
}
