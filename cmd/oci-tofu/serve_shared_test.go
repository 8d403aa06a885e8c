package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// serve warns of a Redis password on the command line (not of one in
// OCI_TOFU_SHARED_CACHE, which ps does not show) and of plain redis:// to
// another host, never writing the password.
func TestWarnSharedCacheExposure(t *testing.T) {
	for _, c := range []struct {
		url, env string
		want     []string
	}{
		{"rediss://redis.example:6380/0", "", nil},
		{"redis://localhost:6379/0", "", nil},
		{"redis://127.0.0.1:6379/0", "", nil},
		{"redis://[::1]:6379/0", "", nil},
		{"redis://redis.example:6379/0", "", []string{"without TLS"}},
		{"rediss://:sekrit@redis.example:6380/0", "", []string{"carries the Redis password"}},
		{"rediss://:sekrit@redis.example:6380/0", "rediss://:sekrit@redis.example:6380/0", nil},
		{"redis://:sekrit@10.0.0.7:6379/0", "", []string{"carries the Redis password", "without TLS"}},
	} {
		t.Setenv("OCI_TOFU_SHARED_CACHE", c.env)
		var log bytes.Buffer
		warnSharedCacheExposure(slog.New(slog.NewTextHandler(&log, nil)), c.url)
		if n := strings.Count(log.String(), "level=WARN"); n != len(c.want) {
			t.Errorf("%s: %d warnings, want %d:\n%s", c.url, n, len(c.want), log.String())
		}
		for _, w := range c.want {
			if !strings.Contains(log.String(), w) {
				t.Errorf("%s: no warning saying %q:\n%s", c.url, w, log.String())
			}
		}
		if strings.Contains(log.String(), "sekrit") {
			t.Errorf("%s: the password was logged:\n%s", c.url, log.String())
		}
	}
}
