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

// keysCheck is what a provider pull knows of the keys its release was
// verified with, for the origin.keys-changed check once it is stored.
type keysCheck struct {
	address string        // the provider as served
	version names.Version // the version stored
	signer  string        // the key ID that verified it
	listed  []string      // the key IDs the origin lists for it, sorted
}

// newKeysCheck is the check of a provider release verified with the key
// signer, the origin listing keys.
func newKeysCheck(address string, v names.Version, signer string, keys []*pgp.Keyring) *keysCheck {
	c := &keysCheck{address: address, version: v, signer: signer}
	for _, k := range keys {
		for _, e := range k.Entities {
			c.listed = append(c.listed, pgp.KeyID(e.PrimaryKey.KeyId))
		}
	}
	slices.Sort(c.listed)
	c.listed = slices.Compact(c.listed)
	return c
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
		id := events.StableID(events.TypeOriginKeysChanged, c.address, c.version.String(), c.signer)
		ev := events.New(e.source, events.OriginKeysChanged{Address: c.address, OldKeyIDs: old, NewKeyIDs: c.newKeyIDs()})
		ev.ID = id
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

// newKeyIDs are the keys the event names as the new ones: those the
// origin lists, the verifying one among them.
func (c *keysCheck) newKeyIDs() []string {
	if slices.Contains(c.listed, c.signer) {
		return c.listed
	}
	return append(slices.Clone(c.listed), c.signer)
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
