package lockfile

import (
	"errors"
	"fmt"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// allowedByPolicy are the versions of vs pol allows for addr (all of them
// without a policy), and the refusals of the others: the proxy leaves
// those out of every listing, so the clients never choose them either.
func allowedByPolicy(pol *policy.Policy, addr names.Provider, vs names.VersionList) (names.VersionList, []error) {
	if pol == nil {
		return vs, nil
	}
	var out names.VersionList
	var denied []error
	for _, v := range vs {
		if err := pol.Check(names.KindProvider, policy.ProviderAddress(addr), v.String()); err != nil {
			denied = append(denied, err)
			continue
		}
		out = append(out, v)
	}
	return out, denied
}

// lockedDenied is the policy's refusal of the locked version, or nil: a
// lock file naming it cannot be kept.
func lockedDenied(locked *names.Version, denied []error) error {
	if locked == nil {
		return nil
	}
	for _, err := range denied {
		var de *policy.DeniedError
		if errors.As(err, &de) && de.Version == locked.String() {
			return fmt.Errorf("the locked version cannot be kept: %w", err)
		}
	}
	return nil
}

// withDenials adds to a selection failure how many versions the policy
// left out, and the first reason, wrapping policy.ErrDenied.
func withDenials(err error, denied []error) error {
	if len(denied) == 0 {
		return err
	}
	return fmt.Errorf("%v (%d left out because %w)", err, len(denied), denied[0])
}
