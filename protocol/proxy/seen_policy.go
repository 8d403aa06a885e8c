package proxy

import (
	"sort"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// seenDenial is an address (of a policy kind) some of whose versions the
// policy denied, for the page. The page asks the policy in force again,
// so what it shows is the policy's word now, not when the version was
// asked for. Bounded like the rest of the record: maxSeenArtifacts
// addresses, the newest maxSeenVersions versions of each.
type seenDenial struct {
	kind, address string
	versions      map[string]names.Version
}

// policyDenied records that the policy denied version v of address.
func (s *seen) policyDenied(kind, address string, v names.Version) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.denied == nil {
		s.denied = map[string]*seenDenial{}
	}
	key := kind + " " + address
	d, ok := s.denied[key]
	if !ok {
		if len(s.denied) >= maxSeenArtifacts {
			return // the page shows the first ones asked for
		}
		d = &seenDenial{kind: kind, address: address, versions: map[string]names.Version{}}
		s.denied[key] = d
	}
	if _, ok := d.versions[v.String()]; ok || len(d.versions) < maxSeenVersions {
		d.versions[v.String()] = v
		return
	}
	oldest := v
	for _, x := range d.versions {
		if x.LessThan(oldest) {
			oldest = x
		}
	}
	if oldest != v {
		delete(d.versions, oldest.String())
		d.versions[v.String()] = v
	}
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
		c := seenDenial{kind: d.kind, address: d.address, versions: make(map[string]names.Version, len(d.versions))}
		for k, v := range d.versions {
			c.versions[k] = v
		}
		ds = append(ds, c)
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
			if dec := pol.Decide(d.kind, d.address, v.String()); !dec.Allow {
				out = append(out, denialView{Kind: d.kind, Address: d.address, Version: v.String(), Rule: dec.Rule, Reason: dec.Reason})
			}
		}
	}
	return out
}
