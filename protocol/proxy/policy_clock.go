package proxy

import "github.com/oci-tofu/oci-tofu/protocol/source"

// Policy decisions that change with time (min_age: a version ages in)
// are made when a document is built, and documents are cached: a
// document notes the earliest time one of its decisions changes
// (decidedUntil, recorded with source.WithDecisions: the gate notes its
// decisions), and is built anew, not served, from then on, by
// Options.Now.

// undecided reports whether a cached document (or failure) holds a policy
// decision that has changed since it was built.
func (s *responder) undecided(d document, err error) bool {
	until := d.decidedUntil
	if err != nil {
		var ok bool
		if until, ok = source.DecidedUntil(err); !ok {
			return false
		}
	}
	return !until.IsZero() && !s.opts.Now().Before(until)
}
