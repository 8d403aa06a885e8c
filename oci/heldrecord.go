package oci

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"oras.land/oras-go/v2/registry/remote"
)

// Recording publishes in the held-address index (Options.HeldIndex):
// every Commit that tags records its repository, once per client, and a
// failure to record is a warning, never the publish's failure (what was
// published stays published; a later push or a repairing listing adds
// the entry).

// heldRecorder records the repositories a client publishes to.
type heldRecorder struct {
	index    Reference
	log      *slog.Logger
	recorded sync.Map // repository path → true, once written
}

// newHeldRecorder reads Options.HeldIndex.
func newHeldRecorder(opts Options) (*heldRecorder, error) {
	ref, err := ParseReference(opts.HeldIndex)
	switch {
	case err != nil:
		return nil, fmt.Errorf("held-address index %q (--catalog-repository): %w", opts.HeldIndex, err)
	case ref.Layout:
		return nil, fmt.Errorf("held-address index %q (--catalog-repository): an OCI layout lists itself; name a registry repository", opts.HeldIndex)
	case ref.Reference != "":
		return nil, fmt.Errorf("held-address index %q (--catalog-repository): name a repository without a tag or digest", opts.HeldIndex)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &heldRecorder{index: ref, log: log}, nil
}

// HeldIndex is the held-address index the client records publishes in
// (Options.HeldIndex); ok is false when it has none.
func (c *Client) HeldIndex() (index Reference, ok bool) {
	if c == nil || c.held == nil {
		return Reference{}, false
	}
	return c.held.index, true
}

// CheckHeldIndex refuses a registry repository ref that is not on the
// held-address index's registry: recording it would send the
// credentials that push ref to another host. An OCI layout, which lists
// itself, is not recorded and not refused.
func (c *Client) CheckHeldIndex(ref Reference) error {
	idx, ok := c.HeldIndex()
	if !ok || ref.Layout || ref.Registry == idx.Registry {
		return nil
	}
	return fmt.Errorf("%s is on the registry %s, and the held-address index %s (--catalog-repository) on %s: the index must be on the registry of what is pushed",
		ref.Name(), ref.Registry, idx.Name(), idx.Registry)
}

// RecordHeld records in the held-address index that ref's repository
// holds what was just published to it; once per client, and only for a
// registry repository on the index's registry other than the index. A
// failure is logged as a warning (Options.Logger), never returned.
func (c *Client) RecordHeld(ctx context.Context, ref Reference) {
	idx, ok := c.HeldIndex()
	if !ok || ref.Layout || ref.Registry != idx.Registry || ref.Repository == idx.Repository {
		return
	}
	if _, done := c.held.recorded.Load(ref.Repository); done {
		return
	}
	if err := c.writeHeld(ctx, idx, ref.Repository); err != nil {
		c.held.log.Warn("the held-address index does not record this publish: the catalogue of a registry that cannot list will not show it until a later push records it",
			"index", idx.Name(), "repository", ref.Name(), "error", err.Error())
		return
	}
	c.held.recorded.Store(ref.Repository, true)
}

func (c *Client) writeHeld(ctx context.Context, idx Reference, repository string) error {
	index, err := c.Open(idx)
	if err != nil {
		return err
	}
	return WriteHeldEntry(ctx, index, repository)
}

// recordHeldOf records the repository a Commit tagged, when it was opened
// by a Client (Open) that keeps a held-address index.
func recordHeldOf(ctx context.Context, r *remote.Repository) {
	if ps, ok := r.Client.(pushScoped); ok && ps.owner != nil {
		ps.owner.RecordHeld(ctx, Reference{Registry: r.Reference.Registry, Repository: r.Reference.Repository})
	}
}
