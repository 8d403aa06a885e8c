package proxy

import "errors"

// checkAttestedPulls refuses RequireAttestation beside a pull-through
// that does not attest what it stores with one of the required keys:
// every release it pulled would then be refused.
func checkAttestedPulls(opts Options) error {
	if opts.PullThrough == nil {
		return nil
	}
	if len(opts.RequireAttestation) == 0 {
		if len(opts.RequireTrust) > 0 || opts.RequireKeyless != nil {
			return errors.New("proxy.New: pull-through stores releases without the signatures RequireTrust or the keyless attestations RequireKeyless ask for, so none of them could be served: require the key of pull-through's attester too (RequireAttestation), or configure one of PullThrough and RequireTrust/RequireKeyless, not both")
		}
		return nil
	}
	a := opts.PullThrough.Attest
	if a == nil || a.Attester == nil {
		return errors.New("proxy.New: pull-through without an attester stores releases without attestations, so it cannot serve only attested releases: give PullThrough.Attest a key among RequireAttestation, or configure one of PullThrough and RequireAttestation, not both")
	}
	for _, v := range opts.RequireAttestation {
		if v.Equal(a.Attester.Key()) {
			return nil
		}
	}
	return errors.New("proxy.New: pull-through attests with a key that is not among RequireAttestation's, so no release it pulls could be served: require the public key of pull-through's attester too")
}
