package gate

import (
	"context"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// tofuAddress is the policy address of OpenTofu releases.
const tofuAddress = "tofu"

// Tofu gates a source of OpenTofu releases. Attested applies the
// attestation rule to them (off with TofuDL pull-through, which would
// otherwise list and pull the releases the rule refuses).
type Tofu struct {
	Inner    source.Tofu
	Judge    Judge
	Attested bool
}

var _ source.Tofu = (*Tofu)(nil)

// TofuVersions are the inner source's versions the policy allows.
func (t *Tofu) TofuVersions(ctx context.Context) (source.Listing, error) {
	l, err := t.Inner.TofuVersions(ctx)
	if err != nil {
		return l, err
	}
	kept, _ := allowed(t.Judge, names.KindTofu, tofuAddress, l) // TofuDL has no word for a deprecation
	return kept, nil
}

// TofuRelease is the inner source's release v, when the policy allows the
// version and, when stored, its facts and attestations admit it.
func (t *Tofu) TofuRelease(ctx context.Context, v names.Version) (*source.TofuEntry, error) {
	if err := t.Judge.Version(names.KindTofu, tofuAddress, "OpenTofu", v); err != nil {
		return nil, err
	}
	rel, err := t.Inner.TofuRelease(ctx, v)
	if err != nil {
		return nil, err
	}
	if err := t.admitted(ctx, rel); err != nil {
		return nil, err
	}
	return rel, nil
}

// OpenTofuFile is the inner source's file, of a release TofuRelease
// would answer (the release is not read when nothing judges it).
func (t *Tofu) OpenTofuFile(ctx context.Context, v names.Version, name string) (*source.Blob, error) {
	if err := t.Judge.Version(names.KindTofu, tofuAddress, "OpenTofu", v); err != nil {
		return nil, err
	}
	if t.Judge.ReadsRoot(names.KindTofu, tofuAddress, t.Attested) {
		rel, err := t.Inner.TofuRelease(ctx, v)
		switch {
		case err == nil:
			if err := t.admitted(ctx, rel); err != nil {
				return nil, err
			}
		case !source.IsNotHeld(err):
			return nil, err
		}
	}
	return t.Inner.OpenTofuFile(ctx, v, name)
}

// admitted judges a stored release's root; one an origin offers has none.
func (t *Tofu) admitted(ctx context.Context, rel *source.TofuEntry) error {
	if rel.Root == nil {
		return nil
	}
	if _, err := t.Judge.Facts(ctx, names.KindTofu, tofuAddress, "OpenTofu", rel.Version, *rel.Root); err != nil {
		return err
	}
	return t.Judge.Attested(ctx, names.KindTofu, "OpenTofu", rel.Version, *rel.Root, t.Attested)
}
