// Package merged is several mappings of one kind as one source, merged
// as OpenTofu merges the oci_mirror blocks of its CLI configuration (its
// MultiSource; docs/proxy.md "Several mappings"): an address's versions
// are those of every mapping that has a repository for it; each version
// is served by the first mapping, in order, that serves it — a copy a
// mapping holds but may not serve (the policy's or the attestation
// rule's refusal) is passed over for the next mapping's. A mapping with
// nothing of what is asked (not found) is passed over; any other failure
// of a mapping's registry is the answer, so an outage never turns into
// another mapping's copy or a shorter list. With pull-through, the first
// mapping (of providers, the first covering the address) lists what its
// origin offers too, and a version no mapping holds at all is pulled
// into it (Pulls).
//
// The walk over the mappings (answers) and the union of their listings
// (union) are the kind's; each kind adds its own methods around them.
package merged

import (
	"cmp"
	"errors"

	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// answers are what the mappings answered for one address, in order,
// classified by walk.
type answers struct {
	// unmapped: the first "no repository here" (source.ErrNotMapped).
	unmapped error
	// notHeld: the first "not held" (source.ErrNotHeld) of a mapped
	// mapping; mapped is that mapping's index (-1: none yet).
	notHeld error
	mapped  int
	// refused: the first other absent answer, a copy held but not
	// served (denied, or not a valid artifact of the kind).
	refused error
	// first: the first absent answer of a mapped mapping.
	first error
}

// walk calls ask for each of n mappings in order until one answers: ask
// returns done when its answer is the walk's. An error that is not
// absent ends the walk and is its answer.
func walk(n int, ask func(i int) (done bool, err error)) (answers, error) {
	a := answers{mapped: -1}
	for i := range n {
		done, err := ask(i)
		switch {
		case err == nil:
			if a.mapped < 0 {
				a.mapped = i
			}
			if done {
				return a, nil
			}
		case source.IsNotMapped(err):
			a.unmapped = cmp.Or(a.unmapped, err)
		case !source.Absent(err):
			return a, err
		default:
			if a.mapped < 0 {
				a.mapped = i
			}
			a.first = cmp.Or(a.first, err)
			if source.IsNotHeld(err) {
				a.notHeld = cmp.Or(a.notHeld, err)
			} else {
				a.refused = cmp.Or(a.refused, err)
			}
		}
	}
	return a, nil
}

// absent is the answer when no mapping served what was asked: the first
// refusal of a copy a mapping holds, else the first mapping's "not
// held", else why no mapping has a repository for the address.
func (a answers) absent() error {
	return cmp.Or(a.refused, cmp.Or(a.notHeld, a.unmapped))
}

// union is the listings' versions, each with the entry of the first
// listing naming it, read as of the earliest of them.
func union(ls []source.Listing) source.Listing {
	var out source.Listing
	have := map[string]bool{}
	for _, l := range ls {
		out.At = source.Earliest(out.At, l.At)
		for _, e := range l.Versions {
			if !have[e.Version.String()] {
				have[e.Version.String()] = true
				out.Versions = append(out.Versions, e)
			}
		}
	}
	return out
}

// originError is the error of a mapping that pulls through when its
// origin failed (pull-through's): OriginAbsent says the origin does not
// offer what was asked.
type originError interface {
	error
	OriginAbsent() bool
}

// absentHere says a mapping's listing has nothing of what is asked: its
// registry holds nothing of it and, for a mapping with pull-through, its
// origin does not offer it either.
func absentHere(err error) bool {
	var oe originError
	return source.Absent(err) || errors.As(err, &oe) && oe.OriginAbsent()
}

// originFailed says a listing with pull-through failed at the origin
// (the mapping's registry holding nothing of the address).
func originFailed(err error) bool {
	var oe originError
	return errors.As(err, &oe)
}
