package proxy

import (
	"context"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/events/webhook"
	"github.com/oci-tofu/oci-tofu/protocol/policyfile"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// The proxy's outbound events (docs/events.md): with Options.EventsFile,
// a webhook dispatcher sends what the server itself decides, the
// policy's denials and warnings (policy.denied, policy.warned) and what
// pull-through stores (version.ingested, via pull-through), to the
// subscriptions the file names. Emitting never waits for the network
// (webhook.Dispatcher.Emit). With the shared state on Redis, the
// replicas claim each delivery there (webhook.FleetClaimer).

// eventsCloseTimeout bounds how long Close waits for queued events to be
// delivered, within the caller's context.
const eventsCloseTimeout = 5 * time.Second

// maxDecisionKeys bounds the decisions remembered as sent: when full,
// the set is cleared (a decision may then be sent once more).
const maxDecisionKeys = 10000

// maxEventHosts bounds the hosts the addresses of the decisions sent per
// policy generation are at, the known ones aside (knownHosts): the network
// mirror's URL names a provider's host, and a mapping without
// ${hostname} serves the same releases under any host a client writes.
const maxEventHosts = 100

// maxAskedKeys bounds the decisions sent per policy generation on
// versions requests named rather than listings held
// (source.Decision.Asked): a request may name a version that exists
// nowhere, and a client could invent any number of them.
const maxAskedKeys = 100

// serverEvents is the dispatcher, the events' source and the policy
// decisions already sent.
type serverEvents struct {
	d      *webhook.Dispatcher
	source string
	sent   decisionsSent
	// ctx ends at close, stopping the file's follower and the reload
	// watchers (events_reload.go), which wg waits for.
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// setUpEvents reads the events file, starts the dispatcher, registers
// its metrics and follows the file (reloaded when it changes and on
// SIGHUP), when Options.EventsFile is set.
func (s *Server) setUpEvents() error {
	file := s.opts.EventsFile
	if file == "" {
		return nil
	}
	cfg, err := webhook.Load(file) // its errors name the file
	if err != nil {
		return err
	}
	fleet := s.eventsClaimer()
	d := webhook.New(cfg, webhook.Options{Logger: s.log, Claimer: fleet})
	if err := s.metrics.Registry().Register(d.Collector()); err != nil {
		d.Close(context.Background())
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	s.events = &serverEvents{d: d, source: eventSource(s.opts), ctx: ctx, stop: stop, sent: decisionsSent{known: knownHosts(s.opts)}}
	policyfile.FollowPath(ctx, file, "events file", s.log, func(why string) {
		if err := d.Reload(file); err != nil {
			s.log.Error("the events file was not reloaded: the subscriptions in force stay", "file", file, "why", why, "error", err.Error())
			return
		}
		s.log.Info("the events file was reloaded", "file", file, "why", why)
	})
	s.log.Info("events: sending webhooks", "file", file, "subscriptions", len(cfg.Subscriptions), "source", s.events.source,
		"fleet", fleet != nil)
	return nil
}

// eventsClaimer is the fleet's claims on deliveries when the shared
// state is on Redis (each event a fleet emits delivered by one replica,
// its delivery taken over when that replica dies); nil otherwise (every
// replica delivers what it emits).
func (s *Server) eventsClaimer() webhook.Claimer {
	r, ok := s.opts.Shared.(*sharedstate.Redis)
	if !ok {
		return nil
	}
	return webhook.FleetClaimer(r.Claims(eventsClaims, sharedstate.ClaimOptions{}))
}

// eventsClaims names the deliveries' claims, outbox and entries on Redis
// (after the shared state's prefix).
const eventsClaims = "events"

// eventSource is the events' source attribute: the public URL, else
// https:// and the registry host name, else a URN of the machine's host
// name. A request's Host is not used: decisions are made while building
// documents many requests share, and a Host is the client's to choose.
func eventSource(o Options) string {
	switch {
	case o.PublicURL != "":
		return o.PublicURL
	case o.RegistryHostname != "":
		return "https://" + o.RegistryHostname
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return "urn:oci-tofu:" + host
}

// knownHosts are the hosts the operator named: the proxy's own
// (ownHostname) and pull-through's origins. Decisions about addresses at
// them are sent however many hosts clients invent (maxEventHosts).
func knownHosts(o Options) map[string]bool {
	known := map[string]bool{}
	if own := ownHostname(o); own != "" {
		known[own] = true
	}
	if pt := o.PullThrough; pt != nil {
		for host := range pt.Origins {
			known[host] = true
		}
		for _, m := range pt.Modules {
			known[m.Registry()] = true
		}
	}
	return known
}

// emitter is where the server's events go; nil without an events file.
func (s *Server) emitter() events.Emitter {
	if s.events == nil {
		return nil
	}
	return s.events.d
}

// eventSourceOf is the events' source; "" without an events file.
func (s *Server) eventSourceOf() string {
	if s.events == nil {
		return ""
	}
	return s.events.source
}

// close stops following the file and closes the dispatcher, waiting for
// its queues at most eventsCloseTimeout (and ctx).
func (e *serverEvents) close(ctx context.Context) {
	if e == nil {
		return
	}
	e.stop()
	e.wg.Wait() // a pass under way ends at its next read
	ctx, cancel := context.WithTimeout(ctx, eventsCloseTimeout)
	defer cancel()
	e.d.Close(ctx)
}

// deliveries are the last deliveries ended, for the page; nil without
// an events file.
func (e *serverEvents) deliveries() []webhook.Delivery {
	if e == nil {
		return nil
	}
	return e.d.Recent()
}

// decided emits the event of a policy decision on a version, when it is
// a denial or an allowance with a warning (a deprecated version, or a
// vulnerability the rule warns of), once per policy generation
// (decisionsSent). Of decisions on versions requests named (Asked),
// which may exist nowhere, at most maxAskedKeys are sent per generation:
// a client naming versions it invents cannot have an event signed and
// sent for each.
func (e *serverEvents) decided(d source.Decision) {
	if e == nil || d.Version == nil {
		return
	}
	reason, ok := eventReason(d.Decision)
	if !ok {
		return
	}
	version := d.Version.String()
	key := decisionKey{kind: string(d.Kind), address: d.Address, version: version, rule: d.Rule, denied: !d.Allow}
	if !e.sent.first(d.Generation, key, d.Asked) {
		return
	}
	e.d.Emit(context.Background(), decisionEvent(e.source, key, events.PolicyDecision{
		Denied: !d.Allow, Address: d.Address, Version: version, Rule: d.Rule, Reason: reason}, time.Now()))
}

// decisionEvent is the event of a decision: its ID is made of the
// decision (its key) and the day (UTC), so that the replicas of a fleet,
// each deciding the same, send one event a day that a shared claimer
// delivers once (webhook.FleetClaimer), and a later day's is an event of
// its own.
func decisionEvent(source string, key decisionKey, data events.PolicyDecision, now time.Time) events.Event {
	ev := events.New(source, data)
	ev.ID = events.StableID(ev.Type, key.kind, ev.Subject, key.rule, key.client, now.UTC().Format(time.DateOnly))
	return ev
}

// eventReason is the reason a decision's event gives: a denial's
// reason, an allowed version's warnings (its deprecation message, the
// vulnerabilities the rule warns of); ok is false for a decision without
// an event (allowed without a warning).
func eventReason(d policy.Decision) (reason string, ok bool) {
	if !d.Allow {
		return d.Reason, true
	}
	switch {
	case d.Deprecated != "" && d.VulnWarning != "":
		return d.Deprecated + "; " + d.VulnWarning, true
	case d.Deprecated != "":
		return d.Deprecated, true
	case d.VulnWarning != "":
		return d.VulnWarning, true
	}
	return "", false
}

// decisionKey is one decision's event: a version's, by a rule, and its
// outcome; client names who was refused, for a request's denial
// (refused), "" for the policy's decision.
type decisionKey struct {
	kind, address, version, rule string
	denied                       bool
	client                       string
}

// refused emits policy.denied naming the client of a request refused a
// version the policy denies (respond.Responder.Refused), once per policy
// generation gen per client: the request's own caller, never another's.
// A request that names no one (client authentication off, a token
// naming no one) sends nothing here: the policy's decision (decided)
// says all there is.
func (e *serverEvents) refused(gen uint64, d *source.Denied, who audit.Caller) {
	if !namesClient(who) {
		return
	}
	c := &events.Client{Name: who.Client, Identity: who.Identity, Subject: who.Subject} // never the token
	key := decisionKey{kind: string(d.Kind), address: d.Address, version: d.Version, rule: d.Rule, denied: true,
		client: c.Name + "\x00" + c.Identity + "\x00" + c.Subject}
	if !e.sent.first(gen, key, true) { // a request's version: it may exist nowhere
		return
	}
	e.d.Emit(context.Background(), decisionEvent(e.source, key, events.PolicyDecision{
		Denied: true, Address: d.Address, Version: d.Version, Rule: d.Rule, Reason: d.Reason, Client: c}, time.Now()))
}

// namesClient reports whether who names a client: a policy file's, an
// OIDC identity's, a registry user, the operator, the client a signed
// URL names.
func namesClient(who audit.Caller) bool {
	switch {
	case who.Client == "", who.Client == audit.Anonymous.Client, who.Client == "unknown":
		return false
	case who.Identity == audit.IdentityNone, who.Identity == audit.IdentityUnknown:
		return false
	}
	return true
}

// decisionsSent are the decisions sent under one policy generation: the
// gate is told a decision each time a document or an answer is built
// (every request a client retries), and each is sent once. The set is
// cleared when the generation changes (a reload may decide anew) and
// when it holds maxDecisionKeys. Of the decisions on versions requests
// named (asked), at most maxAskedKeys are sent per clearing, and only
// about addresses at maxEventHosts hosts besides the known ones.
type decisionsSent struct {
	known map[string]bool

	mu    sync.Mutex
	gen   uint64
	keys  map[decisionKey]struct{}
	hosts map[string]struct{}
	asked int
}

// first reports whether key is new under generation gen, and notes it;
// an asked key only while fewer than maxAskedKeys have been, and one at
// a host not yet seen only while fewer than maxEventHosts have been.
func (s *decisionsSent) first(gen uint64, key decisionKey, asked bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil || gen > s.gen || len(s.keys) >= maxDecisionKeys {
		s.keys, s.hosts, s.gen, s.asked = map[decisionKey]struct{}{}, map[string]struct{}{}, gen, 0
	}
	if _, ok := s.keys[key]; ok {
		return false
	}
	if asked && s.asked >= maxAskedKeys {
		return false
	}
	host, _, _ := strings.Cut(key.address, "/")
	if _, seen := s.hosts[host]; !seen && !s.known[host] {
		if len(s.hosts) >= maxEventHosts {
			return false
		}
		s.hosts[host] = struct{}{}
	}
	if asked {
		s.asked++
	}
	s.keys[key] = struct{}{}
	return true
}
