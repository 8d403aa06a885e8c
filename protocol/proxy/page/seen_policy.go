package page

import (
	"maps"
	"sort"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// seenDenial is an address (of a policy kind) some of whose versions the
// policy denied, for the page. The page asks the policy in force again
// about the version, so what it shows is the policy's word now, not when
// the version was asked for; a denial made on facts read from the
// registry (min_age, signers), which the page cannot read again, is shown
// as it was made while the version rules still leave it to its rule.
// Bounded like the rest of the record: maxSeenArtifacts addresses, the
// newest maxSeenVersions versions of each.
type seenDenial struct {
	kind     names.Kind
	address  string
	versions map[string]names.Version
	facts    map[string]policy.Decision // by version: denials made on facts
}

// PolicyDenied records that the policy denied version v of address (d,
// made on facts read from the registry when fromFacts).
func (s *seen) PolicyDenied(kind names.Kind, address string, v names.Version, d policy.Decision, fromFacts bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.denied == nil {
		s.denied = map[string]*seenDenial{}
	}
	key := string(kind) + " " + address
	sd, ok := s.denied[key]
	if !ok {
		if len(s.denied) >= maxSeenArtifacts {
			return // the page shows the first ones asked for
		}
		sd = &seenDenial{kind: kind, address: address, versions: map[string]names.Version{}, facts: map[string]policy.Decision{}}
		s.denied[key] = sd
	}
	if !sd.keep(v) {
		return
	}
	delete(sd.facts, v.String())
	if fromFacts {
		sd.facts[v.String()] = d
	}
}

// keep makes room for v among the newest maxSeenVersions versions, and
// says whether it is one of them.
func (sd *seenDenial) keep(v names.Version) bool {
	if _, ok := sd.versions[v.String()]; ok || len(sd.versions) < maxSeenVersions {
		sd.versions[v.String()] = v
		return true
	}
	oldest := v
	for _, x := range sd.versions {
		if x.LessThan(oldest) {
			oldest = x
		}
	}
	if oldest == v {
		return false
	}
	delete(sd.versions, oldest.String())
	delete(sd.facts, oldest.String())
	sd.versions[v.String()] = v
	return true
}

// denialView is a version the policy in force denies, and why.
type denialView struct {
	Kind, Address, Version, Rule, Reason string
}

// policyDenials are the recorded denials the policy in force still
// makes, by kind and address, newest version first.
func (s *seen) policyDenials(pol *policy.Policy) []denialView {
	s.mu.Lock()
	var ds []seenDenial
	for _, d := range s.denied {
		ds = append(ds, seenDenial{kind: d.kind, address: d.address, versions: maps.Clone(d.versions), facts: maps.Clone(d.facts)})
	}
	s.mu.Unlock()
	sort.Slice(ds, func(i, j int) bool {
		if ds[i].kind != ds[j].kind {
			return ds[i].kind < ds[j].kind
		}
		return ds[i].address < ds[j].address
	})
	var out []denialView
	for _, d := range ds {
		vs := make(names.VersionList, 0, len(d.versions))
		for _, v := range d.versions {
			vs = append(vs, v)
		}
		sort.Slice(vs, func(i, j int) bool { return vs[j].LessThan(vs[i]) })
		for _, v := range vs {
			if dec, denied := d.denial(pol, v); denied {
				out = append(out, denialView{Kind: string(d.kind), Address: d.address, Version: v.String(), Rule: dec.Rule, Reason: dec.Reason})
			}
		}
	}
	return out
}

// denial is pol's word on version v when it denies it: its version rules'
// now, or the recorded denial on facts if the version rules allow v and
// the same rule still decides it.
func (d seenDenial) denial(pol *policy.Policy, v names.Version) (policy.Decision, bool) {
	dec := pol.Decide(d.kind, d.address, v.String())
	if !dec.Allow {
		return dec, true
	}
	if f, ok := d.facts[v.String()]; ok && f.Rule == dec.Rule {
		return f, true
	}
	return dec, false
}
