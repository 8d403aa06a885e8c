package page

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Bounds of the record of what was served: the page shows it, nothing
// else reads it, and it never grows past these.
const (
	maxSeenArtifacts = 200 // providers, and modules, each
	maxSeenVersions  = 20  // per provider or module, the newest
)

// seen is a small, bounded record of what the proxy served since it
// started, for the page at "/": providers, modules and OpenTofu releases
// with their versions, platforms and signatures, and the last registry
// failure. It is filled in when documents are built (at most once per
// --tag-ttl per document), so it costs requests nothing.
type seen struct {
	mu        sync.Mutex
	started   time.Time
	providers map[string]*seenArtifact
	modules   map[string]*seenArtifact
	tofu      []string // versions, newest first
	failure   *seenFailure
	failures  int
	denied    map[string]*seenDenial
	gen       uint64 // counts changes, for sharing (seen_fleet.go)
}

// seenArtifact is a provider or module and the versions served of it.
type seenArtifact struct {
	Address  string
	Via      map[string]bool // "network mirror", "registry protocol"
	Versions map[string]*seenVersion
	Last     time.Time
}

// seenVersion is one version as served.
type seenVersion struct {
	Version   names.Version
	Platforms []string
	// Signed is "yes" (a publisher signature), "no", or "" (not read).
	Signed string
	// Deprecated is the policy's message when it deprecates the version,
	// as the last listing served said.
	Deprecated string
	// Vulnerable says which known vulnerabilities the policy warns of
	// in the version (its vulnerabilities block, action "warn").
	Vulnerable string
}

// seenFailure is the last upstream failure answered.
type seenFailure struct {
	At    time.Time
	Class string
	What  string
}

func newSeen() *seen {
	return &seen{started: time.Now(), providers: map[string]*seenArtifact{}, modules: map[string]*seenArtifact{}}
}

// artifact finds or adds an entry, evicting the least recently seen one
// when the map is full.
func artifact(m map[string]*seenArtifact, addr string) *seenArtifact {
	a, ok := m[addr]
	if !ok {
		if len(m) >= maxSeenArtifacts {
			var oldest *seenArtifact
			for _, x := range m {
				if oldest == nil || x.Last.Before(oldest.Last) {
					oldest = x
				}
			}
			delete(m, oldest.Address)
		}
		a = &seenArtifact{Address: addr, Via: map[string]bool{}, Versions: map[string]*seenVersion{}}
		m[addr] = a
	}
	a.Last = time.Now()
	return a
}

// version finds or adds a version, keeping the newest maxSeenVersions.
func (a *seenArtifact) version(v names.Version) *seenVersion {
	key := v.String()
	sv, ok := a.Versions[key]
	if !ok {
		sv = &seenVersion{Version: v}
		a.Versions[key] = sv
		if len(a.Versions) > maxSeenVersions {
			oldest := sv
			for _, x := range a.Versions {
				if x.Version.LessThan(oldest.Version) {
					oldest = x
				}
			}
			delete(a.Versions, oldest.Version.String())
		}
	}
	return sv
}

// ProviderListed records the versions a listing served.
func (s *seen) ProviderListed(addr string, via string, vs names.VersionList) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	a := artifact(s.providers, addr)
	a.Via[via] = true
	for _, v := range vs {
		a.version(v)
	}
}

// ProviderVersion records what a version offered: platforms (sorted),
// signature.
func (s *seen) ProviderVersion(addr string, via string, v names.Version, platforms []names.Platform, signed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	a := artifact(s.providers, addr)
	a.Via[via] = true
	sv := a.version(v)
	sv.Platforms = sv.Platforms[:0]
	for _, pl := range platforms {
		sv.Platforms = append(sv.Platforms, pl.String())
	}
	sv.Signed = "no"
	if signed {
		sv.Signed = "yes"
	}
}

// ModuleListed records a module's versions.
func (s *seen) ModuleListed(addr string, vs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	a := artifact(s.modules, addr)
	a.Via["registry protocol"] = true
	for _, raw := range vs {
		if v, err := names.ParseVersion(raw); err == nil {
			a.version(v)
		}
	}
}

// Deprecations records which of the versions a listing served the policy
// deprecates, and why; the others are no longer (a reload may have
// changed the policy). A listing of a kind the page keeps no record of
// (tofu) is left alone.
func (s *seen) Deprecations(kind names.Kind, addr string, listed names.VersionList, deprecated map[string]string) {
	m := map[names.Kind]map[string]*seenArtifact{names.KindProvider: s.providers, names.KindModule: s.modules}[kind]
	if m == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	a := artifact(m, addr)
	for _, v := range listed {
		if sv, ok := a.Versions[v.String()]; ok {
			sv.Deprecated = deprecated[v.String()]
		} else if msg := deprecated[v.String()]; msg != "" {
			a.version(v).Deprecated = msg
		}
	}
}

// Vulnerabilities records which of the versions a provider listing
// served the policy warns of known vulnerabilities in, and which; the
// others have none (a new database or policy may have changed that).
func (s *seen) Vulnerabilities(addr string, listed names.VersionList, vulnerable map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	a := artifact(s.providers, addr)
	for _, v := range listed {
		if sv, ok := a.Versions[v.String()]; ok {
			sv.Vulnerable = vulnerable[v.String()]
		} else if msg := vulnerable[v.String()]; msg != "" {
			a.version(v).Vulnerable = msg
		}
	}
}

// TofuListed records the OpenTofu versions api.json served.
func (s *seen) TofuListed(versions []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.tofu = slices.Clone(versions[:min(len(versions), maxSeenVersions)])
}

// UpstreamFailure records a registry failure answered with 5xx.
func (s *seen) UpstreamFailure(class, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.failures++
	s.failure = &seenFailure{At: time.Now(), Class: class, What: what}
}

// generation changes whenever the record does.
func (s *seen) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// seenView is a copy of the record, sorted for display.
type seenView struct {
	Started   time.Time
	Providers []artifactView
	Modules   []artifactView
	Tofu      []string
	Failure   *seenFailure
	Failures  int
}

type artifactView struct {
	Address  string
	Via      []string
	Versions []seenVersion // newest first
	Last     time.Time
}

func (s *seen) view() seenView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := seenView{Started: s.started, Tofu: slices.Clone(s.tofu), Failures: s.failures}
	if s.failure != nil {
		f := *s.failure
		v.Failure = &f
	}
	v.Providers = artifactViews(s.providers)
	v.Modules = artifactViews(s.modules)
	return v
}

func artifactViews(m map[string]*seenArtifact) []artifactView {
	out := make([]artifactView, 0, len(m))
	for _, a := range m {
		av := artifactView{Address: a.Address, Last: a.Last}
		for via := range a.Via {
			av.Via = append(av.Via, via)
		}
		sort.Strings(av.Via)
		for _, sv := range a.Versions {
			c := *sv
			c.Platforms = slices.Clone(sv.Platforms)
			av.Versions = append(av.Versions, c)
		}
		sort.Slice(av.Versions, func(i, j int) bool { return av.Versions[j].Version.LessThan(av.Versions[i].Version) })
		out = append(out, av)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}
