// Package publish stores verified releases the one way every path
// stores them: `push provider`, `push tofu`, `mirror`, the proxy's
// pull-through and `sbom --backfill`.
//
// Push writes a release (release.Provider or release.Tofu) with its root
// attested before any tag names it: a RootAttester writes what must be
// there first (the Sigstore bundle referrers of --attest-key, or all of
// an Attester's attestation), and may write the rest (cosign's tag
// schema) while the version tags are written; a release whose tags held
// it already is attested after. Its SBOMs (release.SBOMOptions) are
// stored, and with a key attested, before the tags as well.
// PushProvider and PushTofu are the two push verbs' forms of it;
// Backfill stores the SBOMs stored versions lack.
package publish
