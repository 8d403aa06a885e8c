package page

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
)

// clock is a time tests move.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testDownloads is an empty record on a clock of its own, starting at the
// beginning of an hour.
func testDownloads() (*downloads, *clock) {
	c := &clock{t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	d := newDownloads()
	d.now = c.now
	return d, c
}

// download is an event of a provider package delivered at t.
func download(t time.Time, address, version, client string) *audit.Event {
	return &audit.Event{Time: t, Event: audit.EventDownload, Outcome: audit.OutcomeDelivered, Kind: string(names.KindProvider),
		Address: address, Version: version, Platform: "linux_amd64", Client: client, Source: audit.SourceHeld}
}

// counts is the view's 24 h and 7 d counts of address (-1, -1 when it is
// not listed).
func counts(v downloadsView, address string) (day, week int) {
	for _, a := range v.Addresses {
		if a.Address == address {
			return int(a.Day), int(a.Week)
		}
	}
	return -1, -1
}

// Downloads are counted by the hour: the 24 h figure forgets them a day
// later, the 7 d figure a week later, and the ring's buckets are cleared
// as time passes them (a download 7 days later lands in the bucket of the
// first, which it must not add to).
func TestDownloadsRollOver(t *testing.T) {
	d, c := testDownloads()
	const addr = "example.com/acme/widgets"
	t0 := c.now()
	for range 3 {
		d.Record(download(t0, addr, "1.0.0", "ci"))
	}
	c.add(2 * time.Hour)
	d.Record(download(c.now(), addr, "1.0.0", "ci"))
	d.Record(download(c.now(), addr, "1.0.0", "ci"))
	if day, week := counts(d.view(), addr); day != 5 || week != 5 {
		t.Fatalf("at 2h: %d in 24 h, %d in 7 d; want 5, 5", day, week)
	}
	c.add(28 * time.Hour) // 30h after the first
	d.Record(download(c.now(), addr, "1.0.0", "ci"))
	if day, week := counts(d.view(), addr); day != 1 || week != 6 {
		t.Fatalf("at 30h: %d in 24 h, %d in 7 d; want 1, 6", day, week)
	}
	c.t = t0.Add(7*24*time.Hour + 30*time.Minute) // the first ones' hour, a week on: they are gone
	if day, week := counts(d.view(), addr); day != 0 || week != 3 {
		t.Fatalf("at 7d: %d in 24 h, %d in 7 d; want 0, 3", day, week)
	}
	d.Record(download(c.now(), addr, "1.0.0", "ci")) // into the first ones' bucket
	if day, week := counts(d.view(), addr); day != 1 || week != 4 {
		t.Fatalf("at 7d, after another: %d in 24 h, %d in 7 d; want 1, 4", day, week)
	}
	c.add(8 * 24 * time.Hour)
	if day, _ := counts(d.view(), addr); day != -1 {
		t.Fatalf("an address without downloads for 8 days is still listed")
	}
	// Much later, the ring starts again from nothing.
	d.Record(download(c.now(), addr, "1.0.0", "ci"))
	if day, week := counts(d.view(), addr); day != 1 || week != 1 {
		t.Fatalf("a month on: %d in 24 h, %d in 7 d; want 1, 1", day, week)
	}
}

// The record stays bounded: addresses (those beyond the bound counted as
// dropped, until 30 days without downloads free room: the page's 30-day
// counts need them a week on), the versions and
// clients of each, the newest events.
func TestDownloadsAreBounded(t *testing.T) {
	d, c := testDownloads()
	for i := range maxDownloadAddresses + 10 {
		d.Record(download(c.now(), fmt.Sprintf("example.com/acme/p%d", i), "1.0.0", "ci"))
	}
	v := d.view()
	if len(d.addrs) != maxDownloadAddresses || v.Dropped != 10 {
		t.Fatalf("%d addresses kept, %d dropped; want %d, 10", len(d.addrs), v.Dropped, maxDownloadAddresses)
	}
	if len(v.Addresses) != maxShownAddresses || v.More != maxDownloadAddresses-maxShownAddresses {
		t.Errorf("the page lists %d addresses and %d more", len(v.Addresses), v.More)
	}
	c.add(7*24*time.Hour + time.Hour)
	d.Record(download(c.now(), "example.com/acme/late", "1.0.0", "ci"))
	if v := d.view(); len(d.addrs) != maxDownloadAddresses || v.Dropped != 11 || len(v.Addresses) != 0 {
		t.Fatalf("after a week, %d addresses, %d dropped: want the idle ones kept for their 30-day counts, late's dropped", len(d.addrs), v.Dropped)
	}
	if u := d.usage(string(names.KindProvider), "example.com/acme/p0", "1.0.0"); u.Week != 0 || u.Month != 1 || u.Clients != 1 {
		t.Errorf("p0 a week on: %+v, want none in 7 days, 1 in 30, 1 client", u)
	}
	c.add(23 * 24 * time.Hour)
	d.Record(download(c.now(), "example.com/acme/later", "1.0.0", "ci"))
	if len(d.addrs) != 1 || d.view().Addresses[0].Address != "example.com/acme/later" {
		t.Fatalf("after 30 days, %d addresses: the idle ones were not dropped", len(d.addrs))
	}

	const addr = "example.com/acme/busy"
	for i := range 3 * maxDownloadVersions {
		for j := range 3 * maxVersionClients {
			c.add(time.Second)
			d.Record(download(c.now(), addr, fmt.Sprintf("1.%d.0", i), fmt.Sprintf("client-%d", j)))
		}
	}
	a := d.addrs[downloadKey{string(names.KindProvider), addr}]
	if len(a.versions) != maxDownloadVersions {
		t.Fatalf("%d versions kept, want %d", len(a.versions), maxDownloadVersions)
	}
	newest := a.versions[fmt.Sprintf("1.%d.0", 3*maxDownloadVersions-1)]
	if newest == nil || len(newest.clients) != maxVersionClients || !newest.others {
		t.Fatalf("the newest version's clients: %+v", newest)
	}
	if _, ok := newest.clients[fmt.Sprintf("client-%d", 3*maxVersionClients-1)]; !ok {
		t.Errorf("the most recent client was dropped: %v", newest.clients)
	}
	if _, ok := a.versions["1.0.0"]; ok {
		t.Errorf("the least recently downloaded version was kept")
	}

	v = d.view()
	if len(v.Recent) != maxRecentEvents {
		t.Fatalf("%d events kept, want %d", len(v.Recent), maxRecentEvents)
	}
	if got, want := v.Recent[0].Client, fmt.Sprintf("client-%d", 3*maxVersionClients-1); got != want || !v.Recent[0].Time.Equal(c.now()) {
		t.Errorf("the newest event is %+v, want %s's at %s", v.Recent[0], want, c.now())
	}
	for i := 1; i < len(v.Recent); i++ {
		if v.Recent[i].Time.After(v.Recent[i-1].Time) {
			t.Fatalf("events are not newest first: %v after %v", v.Recent[i].Time, v.Recent[i-1].Time)
		}
	}
}

// The newest events are downloads, whatever their outcome, and refusals
// (of documents too); documents delivered are not, and only downloads
// delivered are counted.
func TestDownloadsEvents(t *testing.T) {
	d, c := testDownloads()
	now := c.now()
	d.Record(&audit.Event{Time: now, Event: audit.EventDocument, Outcome: audit.OutcomeDelivered, Kind: "provider", Address: "example.com/a/doc"})
	d.Record(&audit.Event{Time: now, Event: audit.EventDocument, Outcome: audit.OutcomeDenied, Kind: "provider", Address: "example.com/a/denied", Rule: "no", Reason: "not this one"})
	d.Record(&audit.Event{Time: now, Outcome: audit.OutcomeNoAuth, Client: "anonymous", Path: "/v1/mirror/x"})
	d.Record(&audit.Event{Time: now, Event: audit.EventDownload, Outcome: audit.OutcomeAborted, Kind: "provider", Address: "example.com/a/cut", Version: "1.0.0"})
	d.Record(&audit.Event{Time: now, Event: audit.EventDownload, Outcome: audit.OutcomeRedirected, Kind: "module", Address: "example.com/a/m/aws", Version: "2.0.0"})
	v := d.view()
	var got []string
	for _, e := range v.Recent {
		got = append(got, e.Outcome)
	}
	if want := []string{audit.OutcomeRedirected, audit.OutcomeAborted, audit.OutcomeNoAuth, audit.OutcomeDenied}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("events %v, want %v", got, want)
	}
	if len(v.Addresses) != 1 || v.Addresses[0].Address != "example.com/a/m/aws" || v.Addresses[0].Kind != "module" {
		t.Errorf("counted %+v, want the redirected module only", v.Addresses)
	}
}

// Deprecated versions in use are those downloaded in the last 7 days that
// the record of what was served says the policy deprecates, with who
// downloaded them, most recent first.
func TestDeprecatedInUse(t *testing.T) {
	d, c := testDownloads()
	const addr = "example.com/acme/widgets"
	s := newSeen()
	var vs names.VersionList
	for _, raw := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		v, _ := names.ParseVersion(raw)
		vs = append(vs, v)
	}
	s.ProviderListed(addr, "network mirror", vs)
	s.Deprecations(names.KindProvider, addr, vs, map[string]string{"1.0.0": "1.x is end of life", "1.1.0": "1.x is end of life"})

	d.Record(download(c.now(), addr, "1.0.0", "old-ci"))
	c.add(time.Hour)
	d.Record(download(c.now(), addr, "1.1.0", "team-a"))
	c.add(time.Hour)
	d.Record(download(c.now(), addr, "1.1.0", "team-b"))
	d.Record(download(c.now(), addr, "2.0.0", "team-c"))
	c.add(7*24*time.Hour - 90*time.Minute) // 1.0.0's download is now more than 7 days old

	in := d.view().deprecatedInUse(s.view())
	if len(in) != 1 {
		t.Fatalf("deprecated in use: %+v, want 1.1.0 alone", in)
	}
	if u := in[0]; u.Version != "1.1.0" || u.Deprecated != "1.x is end of life" || strings.Join(u.Clients, ",") != "team-b,team-a" || u.Others {
		t.Errorf("deprecated in use: %+v", u)
	}
}

// Requests record concurrently with page views (run with -race).
func TestDownloadsConcurrent(t *testing.T) {
	d := newDownloads()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				d.Record(download(time.Now(), fmt.Sprintf("example.com/acme/p%d", i%7), fmt.Sprintf("1.%d.0", i%3), fmt.Sprintf("c%d", g)))
				if i%50 == 0 {
					d.view()
				}
			}
		}()
	}
	wg.Wait()
	var total uint64
	for _, a := range d.view().Addresses {
		total += a.Week
	}
	if total != 8*200 {
		t.Errorf("%d downloads counted, want %d", total, 8*200)
	}
}

// The page's section shows the counts, the events and the deprecated
// versions in use, escaping what clients named; the minimal page (client
// authentication) shows none of it.
func TestPageShowsDownloads(t *testing.T) {
	for _, minimal := range []bool{false, true} {
		p := New(Config{Minimal: minimal})
		rec := p.Downloads()
		rec.Record(download(time.Now(), "example.com/acme/widgets", "1.0.0", "<script>alert(1)</script>"))
		rec.Record(download(time.Now(), "example.com/acme/widgets", "1.0.0", "ci"))
		rec.Record(&audit.Event{Time: time.Now(), Event: audit.EventDownload, Outcome: audit.OutcomeDenied, Kind: "provider",
			Address: "example.com/acme/widgets", Client: "ci", Rule: "no-1.1", Reason: "1.1 <is> broken"})
		w := httptest.NewRecorder()
		p.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		body := w.Body.String()
		if minimal {
			if strings.Contains(body, `id="downloads"`) || strings.Contains(body, "widgets") {
				t.Errorf("the minimal page shows downloads:\n%s", body)
			}
			continue
		}
		for _, want := range []string{
			`<section id="downloads">`,
			`<tr><td>provider <code>example.com/<wbr>acme/<wbr>widgets</code></td><td>2</td><td>2</td></tr>`,
			`&lt;script&gt;alert(1)&lt;/script&gt;`,
			`<td class="bad">denied</td>`,
			`<code>no-1.1</code>: 1.1 &lt;is&gt; broken`,
			`<td class="ok">delivered</td>`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("the page lacks %s:\n%s", want, body)
			}
		}
		if strings.Contains(body, "<script>") {
			t.Errorf("a client's name reached the page unescaped")
		}
	}
}

// BenchmarkDownloadsRecord is what the page's record costs a download.
func BenchmarkDownloadsRecord(b *testing.B) {
	d := newDownloads()
	ev := download(time.Now(), "example.com/acme/widgets", "1.0.0", "ci")
	b.ReportAllocs()
	for b.Loop() {
		d.Record(ev)
	}
}

// A version's downloads are counted beside its address's: in the last 7
// and 30 days (by UTC day) and its clients of the last 30 days; a
// version never downloaded has none, and one whose counts were dropped
// to keep the record bounded says its counts are partial.
func TestDownloadsOfAVersion(t *testing.T) {
	d, c := testDownloads()
	const addr = "example.com/acme/p"
	d.Record(download(c.now(), addr, "1.0.0", "ci"))
	d.Record(download(c.now(), addr, "1.0.0", "laptop"))
	d.Record(download(c.now(), addr, "1.1.0", "ci"))
	c.add(10 * 24 * time.Hour)
	d.Record(download(c.now(), addr, "1.0.0", "ci"))
	u := d.usage(string(names.KindProvider), addr, "1.0.0")
	if u.Week != 1 || u.Month != 4 || u.Clients != 2 {
		t.Errorf("the address: %+v, want 1 in 7 days, 4 in 30, 2 clients", u)
	}
	if want := (VersionUsage{Week: 1, Month: 3, Clients: 2}); u.Version != want {
		t.Errorf("1.0.0: %+v, want %+v", u.Version, want)
	}
	if v := d.usage(string(names.KindProvider), addr, "1.1.0").Version; v != (VersionUsage{Month: 1, Clients: 1}) {
		t.Errorf("1.1.0: %+v, want 1 in 30 days, 1 client", v)
	}
	if v := d.usage(string(names.KindProvider), addr, "9.9.9").Version; v != (VersionUsage{}) {
		t.Errorf("a version never downloaded: %+v", v)
	}
	c.add(31 * 24 * time.Hour)
	if v := d.usage(string(names.KindProvider), addr, "1.0.0").Version; v != (VersionUsage{}) {
		t.Errorf("1.0.0 31 days after its last download: %+v, want none", v)
	}

	const busy = "example.com/acme/busy"
	for i := range maxDownloadVersions + 1 {
		c.add(time.Second)
		d.Record(download(c.now(), busy, fmt.Sprintf("1.%d.0", i), "ci"))
	}
	d.Record(download(c.now(), busy, "1.0.0", "ci"))
	if v := d.usage(string(names.KindProvider), busy, "1.0.0").Version; v.Month != 1 || !v.Partial {
		t.Errorf("a version counted again after it was dropped: %+v, want 1 in 30 days, partial", v)
	}
}
