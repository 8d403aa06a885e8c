package modulepkg

import (
	"time"

	"github.com/opencontainers/go-digest"
)

// PredicateType is the in-toto predicate type of the attestation
// `push module --attest-key` writes (docs/artifacts.md).
const PredicateType = "https://oci-tofu.dev/attestations/module-package/v1"

// Predicate records what was pushed as a module package: where it came
// from, the zip, and the manifest it is the layer of.
type Predicate struct {
	Repository string           `json:"repository"`
	Tags       []string         `json:"tags"`
	Source     SourcePredicate  `json:"source"`
	Package    PackagePredicate `json:"package"`
	Manifest   string           `json:"manifest"`
	AttestedAt string           `json:"attested_at"`
	Verifier   Verifier         `json:"verifier"`
}

// SourcePredicate is the SOURCE given to push module.
type SourcePredicate struct {
	// Kind is "directory" (packed) or "zip" (pushed byte for byte).
	Kind string `json:"kind"`
	// Path is the source as given on the command line.
	Path string `json:"path"`
	// TreeDigest is a directory's content digest (HashTree: the packed
	// files' names, modes and sha256).
	TreeDigest string `json:"tree_digest,omitempty"`
	// ZipSHA256 is a zip's sha256: the package's digest, as it was given.
	ZipSHA256 string `json:"zip_sha256,omitempty"`
	// Origin is the origin module registry a pull-through fetched the
	// module from (its hostname); URL the source address its download
	// answer gave (without query parameters but ref); Commit the git
	// commit the ref resolved to. Empty for push module.
	Origin string `json:"origin,omitempty"`
	URL    string `json:"url,omitempty"`
	Commit string `json:"commit,omitempty"`
}

// PackagePredicate is the module zip pushed: the manifest's one layer.
type PackagePredicate struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
	Files  int    `json:"files"`
}

// Verifier names the program that made the package and its attestation.
type Verifier struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Predicate is what the attestation of p, pushed to repository (host/path)
// under tags as manifest, says.
func (p *Package) Predicate(repository string, tags []string, manifest digest.Digest, at time.Time, version string) *Predicate {
	src := SourcePredicate{Kind: "directory", Path: p.Source, TreeDigest: p.Tree.String()}
	if p.How == Checked {
		src = SourcePredicate{Kind: "zip", Path: p.Source, ZipSHA256: p.Digest.Encoded()}
	}
	return &Predicate{
		Repository: repository, Tags: tags, Source: src,
		Package:    PackagePredicate{Digest: p.Digest.String(), Size: p.Size, Files: p.Files},
		Manifest:   manifest.String(),
		AttestedAt: at.UTC().Format(time.RFC3339),
		Verifier:   Verifier{Name: "oci-tofu", Version: version},
	}
}
