package proxy

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// The events serve sends when what it decides by changes without a
// request (docs/events.md): a policy put in force (at start and at each
// reload) sends policy.deprecated and policy.revoked for each stored
// version it newly deprecates or revokes, and a vulnerability database
// put in force (a reload) sends vulnerability.detected for each stored
// provider version it newly affects. "Stored" is what the mappings hold
// as the catalogue lists it (Server.held) under --registry-hostname. The
// work runs in one goroutine per watcher, never on a request's path; each
// pass sends at most maxReloadEvents events of its kind, and a newer
// generation waits for the pass under way to end (passes coalesce). The
// IDs are events.StableID of the happening, so every replica of a fleet
// sends the same event.

// maxReloadEvents bounds the events one pass sends (of a policy, of a
// database): half a subscription's queue, so that a pass never pushes
// out what it sent itself. The rest are logged as not sent.
const maxReloadEvents = 500

// maxReloadVersions bounds the stored versions a vulnerability pass
// reads the SBOMs of: each costs a read per platform per database.
const maxReloadVersions = 20000

// vulnCheckEvery is how often the database watcher asks the database
// whether a check of its directory is due (vulns.Live.Current), so that a
// database swapped on a quiet server is seen.
const vulnCheckEvery = 10 * time.Second

// heldAddress is an address the server's mappings hold.
type heldAddress struct {
	kind    names.Kind
	address string
}

// startReloadEvents starts the watchers of the policy, of the
// vulnerability database and of the audit trail's losses, with an
// events file; they end with the events (serverEvents.close).
func (s *Server) startReloadEvents() {
	e := s.events
	if e == nil {
		return
	}
	if s.opts.Policy != nil {
		e.wg.Go(func() { s.watchPolicy(e.ctx) })
	}
	if s.opts.Audit != nil {
		e.wg.Go(func() { s.watchAuditLost(e.ctx) })
	}
	if s.opts.VulnDB != nil {
		baseline, _ := s.opts.VulnDB.Watch() // read now: a reload after New is announced
		e.wg.Go(func() { s.watchVulnDB(e.ctx, baseline) })
	}
}

// watchPolicy announces the standing of the policy in force at start
// (against none: every deprecation and revocation in force is new) and
// of each policy a reload puts in force (against the one last
// announced), until ctx ends.
func (s *Server) watchPolicy(ctx context.Context) {
	var announced *policy.Policy
	for {
		pol, _, replaced := s.opts.Policy.Watch()
		if pol != announced {
			s.announceStanding(ctx, announced, pol)
			announced = pol
		}
		select {
		case <-ctx.Done():
			return
		case <-replaced:
		}
	}
}

// watchVulnDB announces what each database a reload puts in force newly
// finds in the stored provider versions, against the one before, until
// ctx ends. The database in force at start (baseline) sends no
// vulnerability.detected.
func (s *Server) watchVulnDB(ctx context.Context, baseline *vulns.DB) {
	tick := time.NewTicker(vulnCheckEvery)
	defer tick.Stop()
	announced := baseline
	for {
		db, replaced := s.opts.VulnDB.Watch()
		if db != announced {
			s.announceVulns(ctx, announced, db)
			announced = db
		}
		select {
		case <-ctx.Done():
			return
		case <-replaced:
		case <-tick.C:
			s.opts.VulnDB.Current() // starts a check when one is due
		}
	}
}

// heldAddresses are the providers and modules the mappings hold, and
// the OpenTofu releases' address with --tofu-repository. Templates
// without ${hostname} name addresses under --registry-hostname: without
// one, theirs are left out (the address would be the requests' Host).
func (s *Server) heldAddresses(ctx context.Context) ([]heldAddress, error) {
	h, err := s.held(ctx, s.opts.ModuleMappings, s.opts.RegistryHostname)
	if err != nil {
		return nil, err
	}
	out := make([]heldAddress, 0, len(h.Providers)+len(h.Modules)+1)
	for _, p := range h.Providers {
		if p.Hostname != "" {
			out = append(out, heldAddress{names.KindProvider, p.String()})
		}
	}
	for _, m := range h.Modules {
		if m.Host != "" {
			out = append(out, heldAddress{names.KindModule, m.String()})
		}
	}
	if s.opts.TofuRepository != nil {
		out = append(out, heldAddress{names.KindTofu, policy.TofuAddress})
	}
	return out, nil
}

// storedVersions are the versions held of each address, read at most
// the store's concurrency at once; an address whose versions cannot be
// read is logged and has none.
func (s *Server) storedVersions(ctx context.Context, addrs []heldAddress) [][]names.Version {
	out := make([][]names.Version, len(addrs))
	s.store.Each(ctx, len(addrs), func(ctx context.Context, i int) error {
		var err error
		out[i], err = s.storedVersionsOf(ctx, addrs[i].kind, addrs[i].address)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("events: the stored versions of an address were not read", "kind", string(addrs[i].kind), "address", addrs[i].address, "error", err.Error())
		}
		return nil
	})
	return out
}

// standing is what a policy's deciding rule says of a version in
// lifecycle terms: revoked, or deprecated while allowed.
type standing struct {
	revoked bool
	rule    string
	message string
}

// standingOf is pol's standing for version v of a held address; ok is
// false for a version neither revoked nor deprecated (or no policy).
func standingOf(pol *policy.Policy, a heldAddress, v names.Version) (standing, bool) {
	if pol == nil {
		return standing{}, false
	}
	d := pol.DecideVersion(a.kind, a.address, v)
	if msg, ok := pol.Revocation(a.kind, a.address, v); ok && !d.Allow {
		return standing{revoked: true, rule: d.Rule, message: msg}, true
	}
	if d.Allow && d.Deprecated != "" {
		return standing{rule: d.Rule, message: d.Deprecated}, true
	}
	return standing{}, false
}

// newStanding is cur's standing for v when it is new against old's: a
// revocation or deprecation old did not make, or made by another rule (a
// changed message alone is not new).
func newStanding(old, cur *policy.Policy, a heldAddress, v names.Version) (standing, bool) {
	st, ok := standingOf(cur, a, v)
	if !ok {
		return standing{}, false
	}
	if was, ok := standingOf(old, a, v); ok && was.revoked == st.revoked && was.rule == st.rule {
		return standing{}, false
	}
	return st, true
}

// announceStanding sends policy.deprecated and policy.revoked for each
// stored version cur newly deprecates or revokes against old, at most
// maxReloadEvents.
func (s *Server) announceStanding(ctx context.Context, old, cur *policy.Policy) {
	addrs, err := s.heldAddresses(ctx)
	if err != nil {
		s.log.Warn("events: what is stored was not listed: no policy.deprecated or policy.revoked sent for this policy", "error", err.Error())
		return
	}
	out, unsent := standingEvents(old, cur, addrs, s.storedVersions(ctx, addrs), maxReloadEvents)
	for _, st := range out {
		s.events.emitStable(st, st.Rule)
	}
	s.logPass("policy", len(out), unsent)
}

// standingEvents are the events of the versions (of addrs, by index)
// cur newly deprecates or revokes against old, at most limit, in the
// order given, and how many more there are.
func standingEvents(old, cur *policy.Policy, addrs []heldAddress, versions [][]names.Version, limit int) (out []events.PolicyStanding, unsent int) {
	for i, a := range addrs {
		for _, v := range versions[i] {
			st, ok := newStanding(old, cur, a, v)
			switch {
			case !ok:
			case len(out) == limit:
				unsent++
			default:
				out = append(out, events.PolicyStanding{Revoked: st.revoked, Address: a.address, Version: v.String(), Rule: st.rule, Reason: st.message})
			}
		}
	}
	return out, unsent
}

// logPass logs the end of a pass, the events it sent and how many it did
// not send past maxReloadEvents.
func (s *Server) logPass(what string, sent, unsent int) {
	if unsent > 0 {
		s.log.Warn("events: a reload found more than one pass sends: the rest are not sent", "what", what, "sent", sent, "not_sent", unsent, "limit", maxReloadEvents)
		return
	}
	s.log.Info("events: a reload's pass ended", "what", what, "sent", sent)
}

// emitStable emits the event of data with the ID of its happening:
// its type, subject and what makes it one (the rule, the IDs), the same
// on every replica.
func (e *serverEvents) emitStable(data events.Data, what string) {
	ev := events.New(e.source, data)
	ev.ID = events.StableID(ev.Type, ev.Subject, what)
	e.d.Emit(context.Background(), ev)
}

// announceVulns sends vulnerability.detected for each stored provider
// version in which cur finds vulnerabilities old did not, naming those,
// at most maxReloadEvents; it reads at most maxReloadVersions versions'
// SBOMs (each platform's, matched against both databases: cached per
// database, so requests reuse what it reads).
func (s *Server) announceVulns(ctx context.Context, old, cur *vulns.DB) {
	if old == nil || cur == nil {
		return
	}
	addrs, err := s.heldAddresses(ctx)
	if err != nil {
		s.log.Warn("events: what is stored was not listed: no vulnerability.detected sent for this database", "error", err.Error())
		return
	}
	addrs = slices.DeleteFunc(addrs, func(a heldAddress) bool { return a.kind != names.KindProvider })
	versions := s.storedVersions(ctx, addrs)
	type job struct {
		a heldAddress
		v names.Version
	}
	var jobs []job
	for i, a := range addrs {
		for _, v := range versions[i] {
			jobs = append(jobs, job{a, v})
		}
	}
	if len(jobs) > maxReloadVersions {
		s.log.Warn("events: more stored provider versions than a vulnerability pass reads: the rest are not checked", "versions", len(jobs), "limit", maxReloadVersions)
		jobs = jobs[:maxReloadVersions]
	}
	found := make([][]string, len(jobs))
	var newly atomic.Int64
	s.store.Each(ctx, len(jobs), func(ctx context.Context, i int) error {
		if newly.Load() > maxReloadEvents { // enough found: the rest are counted no further
			return nil
		}
		ids, err := s.newFindings(ctx, old, cur, jobs[i].a.address, jobs[i].v)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("events: a stored version's SBOMs were not matched", "address", jobs[i].a.address, "version", jobs[i].v.String(), "error", err.Error())
		}
		if len(ids) > 0 {
			found[i] = ids
			newly.Add(1)
		}
		return nil
	})
	sent, unsent := 0, 0
	for i, ids := range found {
		switch {
		case len(ids) == 0:
		case sent == maxReloadEvents:
			unsent++
		default:
			s.events.emitStable(events.VulnerabilityDetected{Address: jobs[i].a.address, Version: jobs[i].v.String(), IDs: ids}, strings.Join(ids, ","))
			sent++
		}
	}
	s.logPass("vulnerabilities", sent, unsent)
}

// newFindings are the IDs of the vulnerabilities cur finds in version v
// of provider address (any platform's SBOM) that old does not, sorted.
func (s *Server) newFindings(ctx context.Context, old, cur *vulns.DB, address string, v names.Version) ([]string, error) {
	p, err := names.ParseProvider(address)
	if err != nil {
		return nil, err
	}
	held, err := s.heldProviders(p)
	if err != nil {
		return nil, err
	}
	var root *source.Root
	for _, h := range held {
		if root, err = h.Root(ctx, v); err == nil {
			break
		}
	}
	if err != nil || root == nil || root.Index == nil {
		return nil, err
	}
	was, now := map[string]bool{}, map[string]bool{}
	for pl := range root.Index.Platforms {
		if err := addFindings(ctx, old, *root, pl, was); err != nil {
			return nil, err
		}
		if err := addFindings(ctx, cur, *root, pl, now); err != nil {
			return nil, err
		}
	}
	var out []string
	for id := range now {
		if !was[id] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}

// addFindings adds to ids those of the vulnerabilities db finds in the
// SBOM of platform pl of root.
func addFindings(ctx context.Context, db *vulns.DB, root source.Root, pl names.Platform, ids map[string]bool) error {
	pv, err := source.PlatformVulns(ctx, db, root, pl)
	for _, f := range pv.Findings {
		ids[f.ID] = true
	}
	return err
}

// auditLostEvery is how often the audit trail's losses are looked at:
// at most one audit.lost event per interval, with the count lost since
// the last one.
var auditLostEvery = 10 * time.Second

// watchAuditLost sends audit.lost, at most once per auditLostEvery,
// when the audit trail lost events since the last look (its count only:
// Record never waits, and nothing here runs on a request), and once more
// when ctx ends, for the losses since.
func (s *Server) watchAuditLost(ctx context.Context) {
	tick := time.NewTicker(auditLostEvery)
	defer tick.Stop()
	var reported uint64
	for {
		select {
		case <-ctx.Done():
			s.reportAuditLost(&reported)
			return
		case <-tick.C:
			s.reportAuditLost(&reported)
		}
	}
}

// reportAuditLost emits audit.lost with the events lost since reported,
// when there are some, and moves reported on.
func (s *Server) reportAuditLost(reported *uint64) {
	lost := s.opts.Audit.Lost()
	if lost <= *reported {
		return
	}
	s.events.d.Emit(context.Background(), events.New(s.events.source, events.AuditLost{Count: int64(lost - *reported)}))
	*reported = lost
}
