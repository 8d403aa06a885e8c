package page

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// How the page's record is shared between the replicas of a fleet.
const (
	fleetBoard = "seen"
	// fleetPublishEvery is how often a replica publishes its record when
	// it changed; fleetRefreshEvery when it did not (a Redis restarted
	// empty has every record again within it).
	fleetPublishEvery = 2 * time.Second
	fleetRefreshEvery = 10 * time.Second
	// fleetGatherEvery is how long the page reuses the records it
	// gathered.
	fleetGatherEvery = 2 * time.Second
	// fleetRecordTTL is how long a replica's record outlives its last
	// publication: a replica gone leaves the page after it.
	fleetRecordTTL = time.Minute
)

// fleetSeen shares the page's record of what was served with the other
// replicas through a sharedstate.Board: a replica publishes its own
// record in the background, when it changed, at most every
// fleetPublishEvery; the page gathers the others' (at most once per
// fleetGatherEvery, bounded by the store's operation timeout) and shows
// them merged with its own. Requests never wait for the shared store:
// they record into memory as always (seen.go). With the store down the
// page shows this replica's record only and says so; the store's own
// breaker, log line and metrics tell the operator.
type fleetSeen struct {
	board  sharedstate.Board
	local  *seen
	member string // random, per process
	log    *slog.Logger
	stop   chan struct{}
	done   chan struct{}

	mu       sync.Mutex // one gather at a time; guards what follows
	others   []seenView
	members  int
	gathered time.Time
	gatherOK bool
}

func newFleetSeen(board sharedstate.Board, local *seen, log *slog.Logger) *fleetSeen {
	id := make([]byte, 8)
	rand.Read(id)
	f := &fleetSeen{board: board, local: local, member: hex.EncodeToString(id), log: log,
		stop: make(chan struct{}), done: make(chan struct{})}
	go f.publishLoop()
	return f
}

// close stops publishing (the record expires by itself).
func (f *fleetSeen) close() {
	if f == nil {
		return
	}
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.done
}

// publishLoop publishes the replica's record when it changed, and at
// least every fleetRefreshEvery, until close.
func (f *fleetSeen) publishLoop() {
	defer close(f.done)
	t := time.NewTicker(fleetPublishEvery)
	defer t.Stop()
	var gen uint64
	var at time.Time
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
		cur := f.local.generation()
		if cur == gen && time.Since(at) < fleetRefreshEvery {
			continue
		}
		if f.publish() == nil {
			gen, at = cur, time.Now()
		}
	}
}

// publish writes the replica's record on the board.
func (f *fleetSeen) publish() error {
	b, err := encodeFleetRecord(f.local.view())
	if err != nil {
		f.log.Warn("the page's record is not shared", "error", err.Error())
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return f.board.Publish(ctx, fleetBoard, f.member, b, fleetRecordTTL) // failures: the store logs and counts them
}

// fleetView is what the page says of the fleet's records.
type fleetView struct {
	Replicas    int  // replicas whose records are shown, this one included
	Unavailable bool // the shared store did not answer: this replica's record only
}

// view is the replica's record merged with the others' as last
// gathered, gathering again when that is older than fleetGatherEvery.
func (f *fleetSeen) view(ctx context.Context, own seenView) (seenView, fleetView) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.gathered) >= fleetGatherEvery {
		f.gatherLocked(ctx)
	}
	if !f.gatherOK {
		return own, fleetView{Replicas: 1, Unavailable: true}
	}
	return mergeSeen(own, f.others), fleetView{Replicas: f.members}
}

// gatherLocked reads the other replicas' records; a record that does
// not read is left out and logged.
func (f *fleetSeen) gatherLocked(ctx context.Context) {
	f.gathered = time.Now()
	recs, err := f.board.Gather(ctx, fleetBoard, fleetRecordTTL)
	if err != nil {
		f.gatherOK, f.others = false, nil // the store logs and counts it
		return
	}
	f.gatherOK, f.others, f.members = true, f.others[:0], 1
	for member, b := range recs {
		if member == f.member {
			continue
		}
		v, err := readFleetRecord(b, f.gathered)
		if err != nil {
			f.log.Warn("a replica's shared record of what it served does not read: left out of the page", "error", err.Error())
			continue
		}
		f.others = append(f.others, v)
		f.members++
	}
}

// mergeSeen is own with the others' records merged in: artifacts by
// address (protocols joined, the latest time, versions joined, the
// newest maxSeenVersions), the most recently served maxSeenArtifacts,
// OpenTofu versions joined, failures added up and the latest one.
func mergeSeen(own seenView, others []seenView) seenView {
	out := own
	out.Providers = mergeArtifacts(own.Providers, others, func(v seenView) []artifactView { return v.Providers })
	out.Modules = mergeArtifacts(own.Modules, others, func(v seenView) []artifactView { return v.Modules })
	tofu := slices.Clone(own.Tofu)
	for _, o := range others {
		out.Failures += o.Failures
		if o.Failure != nil && (out.Failure == nil || o.Failure.At.After(out.Failure.At)) {
			out.Failure = o.Failure
		}
		for _, id := range o.Tofu {
			if !slices.Contains(tofu, id) {
				tofu = append(tofu, id)
			}
		}
	}
	out.Tofu = newestTofu(tofu)
	return out
}

func mergeArtifacts(own []artifactView, others []seenView, of func(seenView) []artifactView) []artifactView {
	byAddr := map[string]*artifactView{}
	var order []*artifactView
	add := func(a artifactView) {
		m, ok := byAddr[a.Address]
		if !ok {
			c := a
			c.Via, c.Versions = slices.Clone(a.Via), slices.Clone(a.Versions)
			byAddr[a.Address] = &c
			order = append(order, &c)
			return
		}
		mergeArtifact(m, a)
	}
	for _, a := range own {
		add(a)
	}
	for _, o := range others {
		for _, a := range of(o) {
			add(a)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].Last.After(order[j].Last) })
	out := make([]artifactView, 0, min(len(order), maxSeenArtifacts))
	for _, a := range order[:min(len(order), maxSeenArtifacts)] {
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// mergeArtifact merges b into a: a version known with platforms or a
// signature keeps what is known of it.
func mergeArtifact(a *artifactView, b artifactView) {
	if b.Last.After(a.Last) {
		a.Last = b.Last
	}
	for _, via := range b.Via {
		if !slices.Contains(a.Via, via) {
			a.Via = append(a.Via, via)
		}
	}
	sort.Strings(a.Via)
	for _, bv := range b.Versions {
		i := slices.IndexFunc(a.Versions, func(x seenVersion) bool { return x.Version.String() == bv.Version.String() })
		switch {
		case i < 0:
			a.Versions = append(a.Versions, bv)
		case len(a.Versions[i].Platforms) == 0 && a.Versions[i].Signed == "":
			a.Versions[i] = bv
		case a.Versions[i].Deprecated == "":
			a.Versions[i].Deprecated = bv.Deprecated
		}
	}
	sort.Slice(a.Versions, func(i, j int) bool { return a.Versions[j].Version.LessThan(a.Versions[i].Version) })
	a.Versions = a.Versions[:min(len(a.Versions), maxSeenVersions)]
}

// newestTofu sorts OpenTofu versions newest first and keeps
// maxSeenVersions.
func newestTofu(ids []string) []string {
	type tv struct {
		id string
		v  names.Version
	}
	var vs []tv
	for _, id := range ids {
		if v, err := names.ParseTofuVersion(id); err == nil {
			vs = append(vs, tv{id, v})
		}
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[j].v.LessThan(vs[i].v) })
	out := make([]string, 0, min(len(vs), maxSeenVersions))
	for _, x := range vs[:min(len(vs), maxSeenVersions)] {
		out = append(out, x.id)
	}
	return out
}
