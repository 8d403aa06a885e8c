package webhook

import (
	"context"

	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// FleetClaimer is the Claimer, and Recoverer, of replicas sharing
// claims on Redis (sharedstate.Claims): the first replica to claim a
// delivery holds it while it delivers (a lease it renews) and marks it
// done at the end; the others skip it, or take it over when the holder
// stops renewing without ending it. Each claimed delivery's event is
// kept in the fleet's outbox until it ends, so that any replica
// delivers it when its holder was killed, even an event only the holder
// emitted.
func FleetClaimer(c *sharedstate.Claims) Claimer { return fleetClaimer{c: c} }

type fleetClaimer struct{ c *sharedstate.Claims }

func (f fleetClaimer) Claim(ctx context.Context, subscription, eventID string, entry []byte) (Claim, error) {
	h, state, err := f.c.Take(ctx, subscription, eventID, entry)
	switch {
	case err != nil:
		return Claim{}, err
	case state == sharedstate.ClaimDone:
		return Claim{Ended: true}, nil
	case state == sharedstate.ClaimTaken:
		return Claim{Hold: h}, nil
	}
	return Claim{}, nil
}

func (f fleetClaimer) Recover(ctx context.Context, subscription string, limit int) ([][]byte, error) {
	return f.c.Recover(ctx, subscription, limit)
}
