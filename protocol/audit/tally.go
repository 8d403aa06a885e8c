package audit

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// Tally counts downloads by artifact version and client, and refusals by
// client, over the events a Filter keeps. Its size is bounded: at most
// MaxKeys distinct (kind, address, version, client) are counted; events
// of further ones are counted in Dropped, and the answer says it is
// partial.
type Tally struct {
	Filter
	Downloads map[Key]*Use
	// Refusals counts refused requests by client and outcome; names a
	// token merely claimed (IdentityRegistryUnverified) are kept apart,
	// at most MaxUnverified of them, the others counted together under
	// OtherUnverified.
	Refusals map[Refusal]int64
	// Events is how many events the filter kept; Malformed how many
	// lines were not events of this schema; Dropped how many events
	// found the tally full.
	Events, Malformed, Dropped int64

	interned    interner
	unverified  int             // distinct unverified names in Refusals
	downloaders map[string]bool // the unverified names in Downloads (marked)
}

// MaxKeys bounds the distinct keys a Tally counts.
const MaxKeys = 1 << 20

// Filter says which events a tally counts (zero values: all).
type Filter struct {
	Since, Until time.Time
	Client       string
	Kind         string
	Address      string
	Version      string
}

// Key is one artifact version as one client downloaded it.
type Key struct {
	Kind, Address, Version, Client string
}

// Use is how often, and when first and last, a key was downloaded, and
// the repository it was served from (the last seen).
type Use struct {
	Count       int64
	First, Last time.Time
	Repository  string
}

// Refusal is a client and how it was refused; Unverified when the name
// is one a token claimed, not one the proxy verified.
type Refusal struct {
	Client, Outcome string
	Unverified      bool
}

// MaxUnverified bounds the distinct unverified names (with their
// outcomes) a Tally's Refusals keep; OtherUnverified counts the rest.
const MaxUnverified = 1000

// OtherUnverified is the client the refusals of unverified names past
// MaxUnverified are counted under.
const OtherUnverified = "(other unverified names)"

// UnverifiedMark ends the client of a download by a name a token
// merely claimed (IdentityRegistryUnverified) in Downloads.
const UnverifiedMark = " (unverified)"

// unverifiedDownloader is the client a download by marked (a claimed
// name with UnverifiedMark) is counted under: itself for the first
// MaxUnverified names, OtherUnverified (marked) after.
func (t *Tally) unverifiedDownloader(marked string) string {
	if t.downloaders[marked] {
		return marked
	}
	if len(t.downloaders) >= MaxUnverified {
		return OtherUnverified + UnverifiedMark
	}
	if t.downloaders == nil {
		t.downloaders = map[string]bool{}
	}
	t.downloaders[marked] = true
	return marked
}

// refuse counts n refusals of r, within MaxUnverified.
func (t *Tally) refuse(r Refusal, n int64) {
	if _, ok := t.Refusals[r]; !ok && r.Unverified {
		if t.unverified >= MaxUnverified {
			r.Client = OtherUnverified
		} else if r.Client != OtherUnverified {
			t.unverified++
		}
	}
	t.Refusals[r] += n
}

// NewTally is an empty tally of what f keeps.
func NewTally(f Filter) *Tally {
	return &Tally{Filter: f, Downloads: map[Key]*Use{}, Refusals: map[Refusal]int64{}, interned: interner{}}
}

// fresh is an empty tally with t's filter, for one worker.
func (t *Tally) fresh() *Tally { return NewTally(t.Filter) }

// keeps reports whether the filter keeps r.
func (f *Filter) keeps(r *Record) bool {
	switch {
	case !f.Since.IsZero() && r.Time.Before(f.Since),
		!f.Until.IsZero() && !r.Time.Before(f.Until),
		f.Client != "" && r.Client != f.Client,
		f.Kind != "" && r.Kind != f.Kind,
		f.Address != "" && r.Address != f.Address,
		f.Version != "" && r.Version != f.Version:
		return false
	}
	return true
}

// Add counts one event (as Scan does for each line).
func (t *Tally) Add(ev *Event) {
	t.add(&Record{Time: ev.Time, Event: ev.Event, Outcome: ev.Outcome, Client: ev.Client, Kind: ev.Kind,
		Address: ev.Address, Version: ev.Version, Platform: ev.Platform, Source: ev.Source, Repository: ev.Repository, Identity: ev.Identity})
}

func (t *Tally) add(r *Record) {
	if !t.keeps(r) {
		return
	}
	t.Events++
	switch r.Outcome {
	case OutcomeDenied, OutcomeRefused, OutcomeLimited, OutcomeNoAuth:
		t.refuse(Refusal{r.Client, r.Outcome, r.Identity == IdentityRegistryUnverified}, 1)
		return
	}
	if r.Event != EventDownload || (r.Outcome != OutcomeDelivered && r.Outcome != OutcomeRedirected) {
		return
	}
	client := r.Client
	if r.Identity == IdentityRegistryUnverified {
		client = t.unverifiedDownloader(client + UnverifiedMark)
	}
	k := Key{r.Kind, r.Address, r.Version, client}
	u := t.Downloads[k]
	if u == nil {
		if len(t.Downloads) >= MaxKeys {
			t.Dropped++
			return
		}
		u = &Use{First: r.Time, Last: r.Time}
		t.Downloads[k] = u
	}
	u.count(1, r.Time, r.Time, r.Repository)
}

// AddCount counts n downloads of k, the last at last (a fleet's counts:
// the first is not kept there).
func (t *Tally) AddCount(k Key, n int64, last time.Time) {
	if n <= 0 || !t.keeps(&Record{Time: last, Event: EventDownload, Outcome: OutcomeDelivered, Client: k.Client, Kind: k.Kind, Address: k.Address, Version: k.Version}) {
		return
	}
	t.Events += n
	u := t.Downloads[k]
	if u == nil {
		if len(t.Downloads) >= MaxKeys {
			t.Dropped += n
			return
		}
		u = &Use{First: last, Last: last}
		t.Downloads[k] = u
	}
	u.count(n, last, last, "")
}

// count adds n downloads between first and last.
func (u *Use) count(n int64, first, last time.Time, repo string) {
	u.Count += n
	if first.Before(u.First) {
		u.First = first
	}
	if !last.Before(u.Last) {
		u.Last = last
		if repo != "" {
			u.Repository = repo
		}
	}
}

// merge adds o's counts to t.
func (t *Tally) merge(o *Tally) {
	t.Events += o.Events
	t.Malformed += o.Malformed
	t.Dropped += o.Dropped
	for r, n := range o.Refusals {
		t.refuse(r, n)
	}
	for k, u := range o.Downloads {
		if strings.HasSuffix(k.Client, UnverifiedMark) {
			k.Client = t.unverifiedDownloader(k.Client)
		}
		mine := t.Downloads[k]
		if mine == nil {
			if len(t.Downloads) >= MaxKeys {
				t.Dropped += u.Count
				continue
			}
			t.Downloads[k] = u
			continue
		}
		mine.count(u.Count, u.First, u.Last, u.Repository)
	}
}

// Partial reports whether the tally left events out (it was full).
func (t *Tally) Partial() bool { return t.Dropped > 0 }

// Row is a sum of downloads over some keys.
type Row struct {
	Kind     string    `json:"kind,omitempty"`
	Address  string    `json:"address,omitempty"`
	Version  string    `json:"version,omitempty"`
	Client   string    `json:"client,omitempty"`
	Count    int64     `json:"downloads"`
	First    time.Time `json:"first"`
	Last     time.Time `json:"last"`
	Clients  int       `json:"clients,omitempty"`
	Repo     string    `json:"repository,omitempty"`
	clientOf map[string]bool
}

// Group sums the downloads by the parts of the key by keeps (the others
// are left empty), the most downloaded first (then by name).
func (t *Tally) Group(by func(Key) Key) []Row {
	rows := map[Key]*Row{}
	for k, u := range t.Downloads {
		g := by(k)
		r := rows[g]
		if r == nil {
			r = &Row{Kind: g.Kind, Address: g.Address, Version: g.Version, Client: g.Client, First: u.First, Last: u.Last, clientOf: map[string]bool{}}
			rows[g] = r
		}
		r.Count += u.Count
		if u.First.Before(r.First) {
			r.First = u.First
		}
		if !u.Last.Before(r.Last) {
			r.Last = u.Last
			r.Repo = u.Repository
		}
		r.clientOf[k.Client] = true
	}
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		r.Clients = len(r.clientOf)
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Row) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Address, b.Address), cmp.Compare(a.Version, b.Version), cmp.Compare(a.Client, b.Client))
	})
	return out
}

// Groupings of keys for Group.
var (
	ByAddress       = func(k Key) Key { return Key{Kind: k.Kind, Address: k.Address} }
	ByVersion       = func(k Key) Key { return Key{Kind: k.Kind, Address: k.Address, Version: k.Version} }
	ByClient        = func(k Key) Key { return Key{Client: k.Client} }
	ByVersionClient = func(k Key) Key { return k }
	ByAddressClient = func(k Key) Key { return Key{Kind: k.Kind, Address: k.Address, Client: k.Client} }
)

// LastDownloads is when each version was last downloaded, by the
// repository it was served from and its version tag: what prune asks.
func (t *Tally) LastDownloads() map[[2]string]time.Time {
	out := map[[2]string]time.Time{}
	for k, u := range t.Downloads {
		if u.Repository == "" {
			continue
		}
		key := [2]string{u.Repository, k.Version}
		if u.Last.After(out[key]) {
			out[key] = u.Last
		}
	}
	return out
}
