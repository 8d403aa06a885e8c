package pullthrough

import (
	"context"
	"slices"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/events"
)

// keysCheckTimeout bounds the reads of the check that a stored
// release's signing key is the one its nearest earlier version was
// verified with (two registry requests).
const keysCheckTimeout = 10 * time.Second

// maxEventKeyIDs bounds the key IDs an origin.keys-changed event names
// of the old keys, and of the new (an origin may list thousands; an
// event stays small enough to be kept in a fleet's outbox).
const maxEventKeyIDs = 100

// keysCheck is what a provider pull knows of the keys its release was
// verified with, for the origin.keys-changed check once it is stored.
type keysCheck struct {
	address string        // the provider as served
	version names.Version // the version stored
	signer  string        // the key ID that verified it
	// listed are the key IDs the origin lists for it, sorted, at most
	// maxEventKeyIDs (the signer among them if listed); omitted counts
	// the others.
	listed  []string
	omitted int
}

// newKeysCheck is the check of a provider release verified with the key
// signer, the origin listing keys.
func newKeysCheck(address string, v names.Version, signer string, keys []*pgp.Keyring) *keysCheck {
	var listed []string
	for _, k := range keys {
		for _, e := range k.Entities {
			listed = append(listed, pgp.KeyID(e.PrimaryKey.KeyId))
		}
	}
	c := &keysCheck{address: address, version: v, signer: signer}
	c.listed, c.omitted = boundedKeyIDs(listed, signer)
	return c
}

// boundedKeyIDs are ids sorted and without repeats, at most
// maxEventKeyIDs of them (the first, and must among them if ids has
// it), and how many others were left out.
func boundedKeyIDs(ids []string, must string) ([]string, int) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if len(ids) <= maxEventKeyIDs {
		return ids, 0
	}
	kept := slices.Clone(ids[:maxEventKeyIDs])
	if must != "" && !slices.Contains(kept, must) && slices.Contains(ids, must) {
		kept[len(kept)-1] = must // it sorts after every other kept one
	}
	return kept, len(ids) - len(kept)
}

// checkOriginKeys sends origin.keys-changed when the key that verified
// p's release is not one of those the nearest earlier version stored in
// its repository was verified with (the origin signs with another key
// now), in the background: storing and answering do not wait for it.
// A repository without an earlier version, or one pushed without the
// provenance summary, has nothing to compare with.
func (e *Engine) checkOriginKeys(p *Pull) {
	if e.events == nil || p.keys == nil || p.keys.signer == "" {
		return
	}
	e.background(func() {
		ctx, cancel := context.WithTimeout(context.Background(), keysCheckTimeout)
		defer cancel()
		old, err := earlierSigningKeys(ctx, p.repo, p.keys.version)
		if err != nil {
			e.log.Warn("pull-through: the earlier version's signing keys were not read", "provider", p.keys.address, "error", err.Error())
			return
		}
		if len(old) == 0 || slices.Contains(old, p.keys.signer) {
			return
		}
		c := p.keys
		ev := events.New(e.source, keysChangedData(c, old))
		ev.ID = events.StableID(events.TypeOriginKeysChanged, c.address, c.version.String(), c.signer)
		e.events.Emit(ctx, ev)
	})
}

// background runs f in a goroutine Close waits for and InFlight counts.
func (e *Engine) background(f func()) {
	e.mu.Lock()
	e.checking++
	e.mu.Unlock()
	e.running.Add(1)
	go func() {
		defer e.running.Done()
		defer func() {
			e.mu.Lock()
			e.checking--
			e.mu.Unlock()
		}()
		f()
	}()
}

// keysChangedData is the event's data: the earlier version's keys old
// and those the origin lists now (the verifying one among them), each
// bounded (boundedKeyIDs) with the count of those left out.
func keysChangedData(c *keysCheck, old []string) events.OriginKeysChanged {
	d := events.OriginKeysChanged{Address: c.address, NewKeyIDs: c.listed, NewKeyIDsOmitted: c.omitted}
	d.OldKeyIDs, d.OldKeyIDsOmitted = boundedKeyIDs(old, "")
	if !slices.Contains(d.NewKeyIDs, c.signer) { // the origin does not list it
		var more int
		d.NewKeyIDs, more = boundedKeyIDs(append(slices.Clone(d.NewKeyIDs), c.signer), c.signer)
		d.NewKeyIDsOmitted += more
	}
	return d
}

// earlierSigningKeys are the key IDs the version of repo nearest below v
// (else nearest above it) was verified with, as its index's provenance
// summary names them; none when it has no such version or summary.
func earlierSigningKeys(ctx context.Context, repo oci.ReadOnlyRepository, v names.Version) ([]string, error) {
	vs, err := oci.ListVersions(ctx, repo)
	if err != nil {
		return nil, err
	}
	other, ok := nearestOther(vs, v)
	if !ok {
		return nil, nil
	}
	pv, err := oci.ResolveProvider(ctx, repo, other)
	if err != nil {
		return nil, err
	}
	if pv.Summary == nil {
		return nil, nil
	}
	return pv.Summary.SigningKeyIDs, nil
}

// nearestOther is the greatest version of sorted vs below v, else the
// least above it.
func nearestOther(vs names.VersionList, v names.Version) (names.Version, bool) {
	var above *names.Version
	for i := len(vs) - 1; i >= 0; i-- {
		switch {
		case vs[i].LessThan(v):
			return vs[i], true
		case vs[i].GreaterThan(v):
			above = &vs[i]
		}
	}
	if above == nil {
		return names.Version{}, false
	}
	return *above, true
}
