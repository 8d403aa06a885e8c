package source

import "errors"

// ErrNotMapped marks an error that says a mapping (a repository template)
// has no repository for an address at all: several mappings pass over it
// silently, and pull-through has nowhere to store into.
var ErrNotMapped = errors.New("not mapped")

type notMapped struct{ error }

func (e notMapped) Unwrap() error        { return e.error }
func (e notMapped) Is(target error) bool { return target == ErrNotMapped }

// MarkNotMapped marks err as ErrNotMapped.
func MarkNotMapped(err error) error { return notMapped{err} }

// IsNotMapped reports whether err was marked by MarkNotMapped.
func IsNotMapped(err error) bool { return errors.Is(err, ErrNotMapped) }
