package page

import (
	"sort"
	"sync"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
)

// Bounds of the record of downloads: like the record of what was served,
// the page alone reads it, and it never grows past these.
const (
	// downloadHours is how far back downloads are counted, in hourly
	// buckets: 7 days; downloadDays in daily buckets, 30 days (an
	// address is kept that long after its last download).
	downloadHours = 7 * 24
	downloadDays  = 30
	// maxDownloadAddresses bounds the addresses counted; downloads of
	// an address beyond them are counted as dropped.
	maxDownloadAddresses = 4096
	// maxDownloadVersions bounds the versions of an address whose
	// clients are kept (the most recently downloaded), and
	// maxVersionClients the clients kept per version (the most recent).
	maxDownloadVersions = 20
	maxVersionClients   = 10
	// maxRecentEvents is how many of the newest events are kept.
	maxRecentEvents = 20
	// maxShownAddresses is how many addresses the page lists, the most
	// downloaded.
	maxShownAddresses = 100
)

// downloads is the page's record of the audit events (protocol/audit),
// an audit.Sink: downloads per address over the last 24 hours and 7 days
// (hourly buckets), the newest events (downloads and refusals), and who
// downloaded which version, for the deprecated versions still in use.
// Record runs on each request's goroutine once it ends: a lock, a map
// lookup and a few stores.
type downloads struct {
	now func() time.Time // time.Now; tests move it

	mu      sync.Mutex
	addrs   map[downloadKey]*addressDownloads
	dropped uint64 // downloads of addresses beyond maxDownloadAddresses
	pruned  int64  // the hour addresses without downloads were last dropped
	recent  [maxRecentEvents]recentEvent
	next    int // where the next event goes in recent
	events  int // events recorded, up to maxRecentEvents
}

// downloadKey is an address of a kind.
type downloadKey struct {
	kind, address string
}

// addressDownloads are an address's downloads: counts by hour, in a ring
// holding the hours (last-downloadHours, last], by day, and its
// versions'.
type addressDownloads struct {
	hours [downloadHours]uint32
	last  int64 // the hour of the newest download
	dayCounts
	versions map[string]*versionDownloads
	// versionsDropped says a version's record was dropped to keep
	// maxDownloadVersions: a version counted since may be counted short.
	versionsDropped bool
}

// dayCounts are downloads by day, in a ring holding the days
// (lastDay-downloadDays, lastDay].
type dayCounts struct {
	days    [downloadDays]uint32
	lastDay int64 // the day of the newest download
}

// versionDownloads is how often a version was downloaded by day, who
// downloaded it, and when last.
type versionDownloads struct {
	dayCounts
	last    time.Time
	clients map[string]time.Time // the most recent maxVersionClients
	others  bool                 // more clients were dropped
}

// recentEvent is an event as the page lists it.
type recentEvent struct {
	Time                                  time.Time
	Event, Outcome, Client, Kind, Address string
	Version, Platform, Path, Rule, Reason string
}

func newDownloads() *downloads {
	return &downloads{now: time.Now, addrs: map[downloadKey]*addressDownloads{}}
}

// hourOf is the number of the hour t is in.
func hourOf(t time.Time) int64 { return t.Unix() / 3600 }

// Record takes an event: a download delivered is counted; downloads of
// any outcome and refusals are among the newest events; documents
// delivered (serve --audit-documents) are left out.
func (d *downloads) Record(ev *audit.Event) {
	refused := isRefusal(ev.Outcome)
	if ev.Event != audit.EventDownload && !refused {
		return
	}
	t := ev.Time
	if t.IsZero() {
		t = d.now()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recent[d.next] = recentEvent{Time: t, Event: ev.Event, Outcome: ev.Outcome, Client: ev.Client, Kind: ev.Kind, Address: ev.Address,
		Version: ev.Version, Platform: ev.Platform, Path: ev.Path, Rule: ev.Rule, Reason: ev.Reason}
	d.next = (d.next + 1) % maxRecentEvents
	d.events = min(d.events+1, maxRecentEvents)
	if !ev.Delivered() || ev.Address == "" {
		return
	}
	h := hourOf(t)
	d.prune(h)
	k := downloadKey{ev.Kind, ev.Address}
	a := d.addrs[k]
	if a == nil {
		if len(d.addrs) >= maxDownloadAddresses {
			d.dropped++
			return
		}
		a = &addressDownloads{last: h, dayCounts: dayCounts{lastDay: h / 24}, versions: map[string]*versionDownloads{}}
		d.addrs[k] = a
	}
	a.count(h)
	a.countDay(h / 24)
	if ev.Version != "" {
		vd := a.version(ev.Version, t)
		vd.countDay(h / 24)
		vd.client(ev.Client, t)
	}
}

// isRefusal reports whether outcome is a request refused.
func isRefusal(outcome string) bool {
	switch outcome {
	case audit.OutcomeDenied, audit.OutcomeRefused, audit.OutcomeLimited, audit.OutcomeNoAuth:
		return true
	}
	return false
}

// prune drops, once an hour, the addresses without a download in the
// last downloadHours, making room for others.
func (d *downloads) prune(h int64) {
	if h <= d.pruned {
		return
	}
	d.pruned = h
	for k, a := range d.addrs {
		if a.lastDay <= h/24-downloadDays {
			delete(d.addrs, k)
		}
	}
}

// count adds a download in hour h, clearing the hours the ring passes.
func (a *addressDownloads) count(h int64) {
	if h > a.last {
		for x := a.last + 1; x <= h && x <= a.last+downloadHours; x++ {
			a.hours[x%downloadHours] = 0
		}
		a.last = h
	}
	if h > a.last-downloadHours { // a clock set back, or an event from another hour
		a.hours[h%downloadHours]++
	}
}

// countDay adds a download on day day, clearing the days the ring
// passes.
func (a *dayCounts) countDay(day int64) {
	if day > a.lastDay {
		for x := a.lastDay + 1; x <= day && x <= a.lastDay+downloadDays; x++ {
			a.days[x%downloadDays] = 0
		}
		a.lastDay = day
	}
	if day > a.lastDay-downloadDays {
		a.days[day%downloadDays]++
	}
}

// sinceDay is the downloads on the days (today-days, today].
func (a *dayCounts) sinceDay(today int64, days int64) uint64 {
	var n uint64
	for x := max(today-days+1, a.lastDay-downloadDays+1); x <= min(today, a.lastDay); x++ {
		n += uint64(a.days[x%downloadDays])
	}
	return n
}

// since is the downloads in the hours (now-hours, now].
func (a *addressDownloads) since(now int64, hours int64) uint64 {
	var n uint64
	for x := max(now-hours+1, a.last-downloadHours+1); x <= min(now, a.last); x++ {
		n += uint64(a.hours[x%downloadHours])
	}
	return n
}

// version finds or adds a version downloaded at t, keeping the most
// recently downloaded maxDownloadVersions.
func (a *addressDownloads) version(v string, t time.Time) *versionDownloads {
	vd := a.versions[v]
	if vd == nil {
		if len(a.versions) >= maxDownloadVersions {
			var oldest string
			for x, o := range a.versions {
				if oldest == "" || o.last.Before(a.versions[oldest].last) {
					oldest = x
				}
			}
			delete(a.versions, oldest)
			a.versionsDropped = true
		}
		vd = &versionDownloads{dayCounts: dayCounts{lastDay: hourOf(t) / 24}, clients: map[string]time.Time{}}
		a.versions[v] = vd
	}
	if t.After(vd.last) {
		vd.last = t
	}
	return vd
}

// client notes that client downloaded the version at t, keeping the
// most recent maxVersionClients.
func (vd *versionDownloads) client(client string, t time.Time) {
	if _, ok := vd.clients[client]; !ok && len(vd.clients) >= maxVersionClients {
		var oldest string
		for c, at := range vd.clients {
			if oldest == "" || at.Before(vd.clients[oldest]) {
				oldest = c
			}
		}
		delete(vd.clients, oldest)
		vd.others = true
	}
	if t.After(vd.clients[client]) {
		vd.clients[client] = t
	}
}

// downloadsView is a copy of the record for the page.
type downloadsView struct {
	Addresses []addressView // most downloaded in 7 days first, up to maxShownAddresses
	More      int           // addresses downloaded in 7 days not listed
	Recent    []recentEvent // newest first
	Dropped   uint64
	versions  []versionInUse // downloaded in the last 7 days
}

// addressView is an address's downloads.
type addressView struct {
	Kind, Address string
	Day, Week     uint64
}

// versionInUse is a version downloaded in the last 7 days, and by whom
// (the most recent first).
type versionInUse struct {
	Kind, Address, Version string
	Last                   time.Time
	Clients                []string
	Others                 bool
	// Deprecated is the policy's message, when the page's record says
	// the policy deprecates the version.
	Deprecated string
}

func (d *downloads) view() downloadsView {
	now := d.now()
	h := hourOf(now)
	d.mu.Lock()
	defer d.mu.Unlock()
	v := downloadsView{Dropped: d.dropped}
	for i := 1; i <= d.events; i++ {
		v.Recent = append(v.Recent, d.recent[(d.next-i+maxRecentEvents)%maxRecentEvents])
	}
	for k, a := range d.addrs {
		week := a.since(h, downloadHours)
		if week == 0 {
			continue
		}
		v.Addresses = append(v.Addresses, addressView{Kind: k.kind, Address: k.address, Day: a.since(h, 24), Week: week})
		for ver, vd := range a.versions {
			if now.Sub(vd.last) >= downloadHours*time.Hour {
				continue
			}
			u := versionInUse{Kind: k.kind, Address: k.address, Version: ver, Last: vd.last, Others: vd.others}
			for c := range vd.clients {
				u.Clients = append(u.Clients, c)
			}
			sort.Slice(u.Clients, func(i, j int) bool {
				ti, tj := vd.clients[u.Clients[i]], vd.clients[u.Clients[j]]
				return ti.After(tj) || ti.Equal(tj) && u.Clients[i] < u.Clients[j]
			})
			v.versions = append(v.versions, u)
		}
	}
	sort.Slice(v.Addresses, func(i, j int) bool {
		x, y := v.Addresses[i], v.Addresses[j]
		if x.Week != y.Week {
			return x.Week > y.Week
		}
		if x.Kind != y.Kind {
			return x.Kind < y.Kind
		}
		return x.Address < y.Address
	})
	if len(v.Addresses) > maxShownAddresses {
		v.More = len(v.Addresses) - maxShownAddresses
		v.Addresses = v.Addresses[:maxShownAddresses]
	}
	return v
}

// Usage is an address's downloads delivered by this process, as its
// audit trail recorded them: in the last 7 and 30 days, and the clients
// that downloaded a version of it in the last 30 days (those kept: at
// most maxVersionClients per version, maxDownloadVersions versions;
// More when some were dropped); and one version's.
type Usage struct {
	Week, Month uint64
	Clients     int
	More        bool
	Version     VersionUsage
}

// VersionUsage is a version's downloads delivered by this process: in
// the last 7 and 30 days (by UTC day, today included), its clients of
// the last 30 days (at most maxVersionClients: More when some were
// dropped), and Partial when the record of the address's versions
// dropped one (only the maxDownloadVersions most recently downloaded
// are kept), so this one's counts may be short.
type VersionUsage struct {
	Week, Month uint64
	Clients     int
	More        bool
	Partial     bool
}

// usage is the Usage of address of kind, and of its version.
func (d *downloads) usage(kind, address, version string) Usage {
	now := d.now()
	h := hourOf(now)
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.addrs[downloadKey{kind, address}]
	if a == nil {
		return Usage{}
	}
	u := Usage{Week: a.since(h, downloadHours), Month: a.sinceDay(h/24, downloadDays)}
	clients := map[string]bool{}
	for _, vd := range a.versions {
		for c := range vd.recentClients(now) {
			clients[c] = true
		}
		u.More = u.More || vd.others
	}
	u.Clients = len(clients)
	if vd := a.versions[version]; vd != nil {
		u.Version = VersionUsage{Week: vd.sinceDay(h/24, 7), Month: vd.sinceDay(h/24, downloadDays),
			Clients: len(vd.recentClients(now)), More: vd.others, Partial: a.versionsDropped}
	}
	return u
}

// recentClients are the version's clients kept that downloaded it in
// the last 30 days.
func (vd *versionDownloads) recentClients(now time.Time) map[string]bool {
	out := map[string]bool{}
	for c, at := range vd.clients {
		if now.Sub(at) < downloadDays*24*time.Hour {
			out[c] = true
		}
	}
	return out
}

// deprecatedInUse are the versions downloaded in the last 7 days that
// the record of what was served says the policy deprecates, by kind,
// address and version.
func (v downloadsView) deprecatedInUse(seen seenView) []versionInUse {
	msgs := map[downloadKey]map[string]string{}
	for kind, as := range map[names.Kind][]artifactView{names.KindProvider: seen.Providers, names.KindModule: seen.Modules} {
		for _, a := range as {
			for _, sv := range a.Versions {
				if sv.Deprecated == "" {
					continue
				}
				k := downloadKey{string(kind), a.Address}
				if msgs[k] == nil {
					msgs[k] = map[string]string{}
				}
				msgs[k][sv.Version.String()] = sv.Deprecated
			}
		}
	}
	var out []versionInUse
	for _, u := range v.versions {
		if msg := msgs[downloadKey{u.Kind, u.Address}][u.Version]; msg != "" {
			u.Deprecated = msg
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Kind != y.Kind {
			return x.Kind < y.Kind
		}
		if x.Address != y.Address {
			return x.Address < y.Address
		}
		return versionLess(y.Version, x.Version) // newest first
	})
	return out
}

// versionLess orders versions as versions, and what does not parse as
// one by its text, after them.
func versionLess(a, b string) bool {
	va, errA := names.ParseVersion(a)
	vb, errB := names.ParseVersion(b)
	switch {
	case errA == nil && errB == nil:
		return va.LessThan(vb)
	case errA == nil || errB == nil:
		return errA == nil
	}
	return a < b
}
