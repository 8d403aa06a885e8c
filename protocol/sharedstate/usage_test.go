package sharedstate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// The fleet's usage of an address: the downloads of the last 7 and 30
// days, by the day of each count, and the clients of the last 30 days,
// added by every replica's counts and kept apart from other addresses;
// the download counts are read as before.
func TestRedisUsage(t *testing.T) {
	srv := testenv.StartRedis(t)
	a, b := openRedis(t, srv.URL(), nil), openRedis(t, srv.URL(), nil)
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	day := func(n int) time.Time { return now.Add(-time.Duration(n) * 24 * time.Hour) }
	const addr = "example.com/test/hello"
	count := func(r *sharedstate.Redis, version, client string, n int64, at time.Time) {
		t.Helper()
		if err := r.CountDownloads(ctx, []sharedstate.DownloadCount{{Kind: "provider", Address: addr, Version: version, Client: client, Count: n, Last: at}}); err != nil {
			t.Fatal(err)
		}
	}
	count(a, "1.0.0", "ci", 2, now)
	count(b, "1.1.0", "ci", 1, day(3))
	count(b, "1.0.0", "laptop", 4, day(10))
	count(a, "1.0.0", "old", 8, day(40))
	if err := a.CountDownloads(ctx, []sharedstate.DownloadCount{{Kind: "provider", Address: "example.com/test/other", Version: "1.0.0", Client: "x", Count: 16, Last: now}}); err != nil {
		t.Fatal(err)
	}
	u, err := b.Usage(ctx, "provider", addr, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := (sharedstate.AddressUsage{Week: 3, Month: 7, Clients: 2}); u != want {
		t.Errorf("usage %+v, want %+v", u, want)
	}
	if u, _ := a.Usage(ctx, "provider", "example.com/test/none", now); u != (sharedstate.AddressUsage{}) {
		t.Errorf("an address never downloaded: %+v", u)
	}
	for version, want := range map[string]sharedstate.AddressUsage{
		"1.0.0": {Week: 2, Month: 6, Clients: 2}, "1.1.0": {Week: 1, Month: 1, Clients: 1}, "9.9.9": {},
	} {
		if u, err := a.VersionUsage(ctx, "provider", addr, version, now); err != nil || u != want {
			t.Errorf("usage of %s: %+v %v, want %+v", version, u, err, want)
		}
	}
	if u, _ := a.VersionUsage(ctx, "provider", "example.com/test/other", "1.1.0", now); u != (sharedstate.AddressUsage{}) {
		t.Errorf("another address's version: %+v", u)
	}
	counts, err := a.Downloads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, c := range counts {
		total += c.Count
	}
	if len(counts) != 5 || total != 31 {
		t.Errorf("the download counts: %d, %d in all: %v", len(counts), total, fmt.Sprint(counts))
	}
}

// The usage of an address stays bounded: old days are dropped, at most
// 256 clients are kept (More says so), and the counts stay right.
func TestRedisUsageIsBounded(t *testing.T) {
	srv := testenv.StartRedis(t)
	r := openRedis(t, srv.URL(), nil)
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var cs []sharedstate.DownloadCount
	for i := range 1100 {
		cs = append(cs, sharedstate.DownloadCount{Kind: "provider", Address: "example.com/test/hello", Version: "1.0.0", Client: fmt.Sprintf("c%d", i), Count: 1,
			Last: now.Add(-time.Duration(i%60) * 24 * time.Hour)})
	}
	if err := r.CountDownloads(ctx, cs); err != nil {
		t.Fatal(err)
	}
	u, err := r.Usage(ctx, "provider", "example.com/test/hello", now)
	if err != nil {
		t.Fatal(err)
	}
	// 1100 clients over 60 days, one a day in turn: 560 downloads in the
	// last 30 days, 133 in 7; of the first 256 clients (those kept),
	// 140 downloaded in the last 30 days (the 30th day back included).
	if want := (sharedstate.AddressUsage{Week: 133, Month: 560, Clients: 140, More: true}); u != want {
		t.Errorf("usage %+v, want %+v", u, want)
	}
}
