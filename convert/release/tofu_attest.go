package release

import (
	"fmt"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// TofuPredicateType is the in-toto predicate type of the attestation
// `push tofu --attest-key` writes (docs/artifacts.md).
const TofuPredicateType = "https://oci-tofu.dev/attestations/tofu-release/v1"

// TofuPredicate records what oci-tofu verified before pushing an OpenTofu
// release: SHA256SUMS, its signature and the key that made it, and every
// file's sha256 as SHA256SUMS lists it and as pushed.
type TofuPredicate struct {
	Version         string              `json:"version"`
	Repository      string              `json:"repository"`
	KeyIDs          []string            `json:"signing_key_ids"`
	KeyFingerprints []string            `json:"signing_key_fingerprints"`
	SHA256SUMS      *FileDigest         `json:"sha256sums"`
	SHA256SUMSSig   *FileDigest         `json:"sha256sums_signature"`
	Files           []TofuFilePredicate `json:"files"`
	VerifiedAt      string              `json:"verified_at"`
	Verifier        Verifier            `json:"verifier"`
}

// TofuFilePredicate is one file of the release (a layer named after it).
type TofuFilePredicate struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Predicate is what the attestation of r, pushed to repository (its
// name, host/path), says.
func (r *Tofu) Predicate(repository string, at time.Time, version string) *TofuPredicate {
	sumsName := names.TofuSHA256SUMSName(r.Version)
	p := &TofuPredicate{
		Version: r.Version, Repository: repository,
		KeyIDs: []string{r.KeyID}, KeyFingerprints: []string{},
		Files:      make([]TofuFilePredicate, len(r.Files)),
		VerifiedAt: at.UTC().Format(time.RFC3339),
		Verifier:   Verifier{Name: "oci-tofu", Version: version},
	}
	if r.KeyFingerprint != "" {
		p.KeyFingerprints = []string{r.KeyFingerprint}
	}
	for i, f := range r.Files {
		p.Files[i] = TofuFilePredicate{Name: f.Name, SHA256: f.SHA256, Size: f.Size}
		switch f.Name {
		case sumsName:
			p.SHA256SUMS = &FileDigest{Name: f.Name, SHA256: f.SHA256}
		case sumsName + ".gpgsig":
			p.SHA256SUMSSig = &FileDigest{Name: f.Name, SHA256: f.SHA256}
		}
	}
	return p
}

// primaryFingerprint is the fingerprint (upper-case hex) of the
// keyring's primary key with id keyID; empty when there is none.
func primaryFingerprint(kr *pgp.Keyring, keyID string) string {
	if kr == nil {
		return ""
	}
	for _, e := range kr.Entities {
		if pgp.KeyID(e.PrimaryKey.KeyId) == keyID {
			return strings.ToUpper(fmt.Sprintf("%x", e.PrimaryKey.Fingerprint))
		}
	}
	return ""
}
