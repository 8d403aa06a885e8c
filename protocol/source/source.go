package source

import (
	"context"
	"io"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// The seam, kind by kind: a source of a kind answers with model values
// and the typed errors of errors.go. What the registry holds (held), what
// pull-through fetches (pulled), several mappings (merged) and the policy
// with the attestation rule (the gate) are sources of the same interface
// wrapping one another; the proxy composes them once, and its handlers
// render what the outermost answers.

// Listed is one version a source lists.
type Listed struct {
	Version names.Version
	// Stored: the registry holds it (or pull-through has just stored it);
	// otherwise an origin offers it.
	Stored bool
}

// Listing is what a source lists of an address, and when it was read
// (zero: now).
type Listing struct {
	Versions []Listed
	At       time.Time
}

// Root is a stored release's root (what attestations and signatures are
// about) and the repository holding it.
type Root struct {
	Repo   *store.Repo
	Digest digest.Digest
	// Index is a provider release's index (its publisher keys are read
	// through it); nil for other kinds.
	Index *oci.ProviderVersion
}

// Blob is a file a source hands over for delivery: exactly one of a
// layer the registry holds (Repo and Layer: streamed and verified, or
// redirected to storage), bytes held in memory (Data), or a file growing
// as pull-through downloads it (Pulling).
type Blob struct {
	Name        string
	ContentType string
	// Pinned: the URL names the blob's digest (directly or through an
	// index), so HTTP caches may keep it.
	Pinned bool

	Repo    *store.Repo
	Layer   ocispec.Descriptor
	Data    []byte
	Pulling Download
	// From is the stored release the blob belongs to, when a pull URL
	// found it in the registry (the gate judges it).
	From *Root
}

// Download is a file of an origin's release on its way to disk, which
// any number of readers follow while it grows (pull-through's file):
// readers never see the whole file before it has verified.
type Download interface {
	// Name is the file's name in its release.
	Name() string
	// Digest is the digest the file must have ("sha256:…"), empty for
	// a file nothing lists.
	Digest() string
	// Answer waits until the origin has answered, and is the announced
	// size (-1: none), or the download's error if it failed before.
	Answer(ctx context.Context) (int64, error)
	// Reader follows the file from its start. The caller closes it.
	Reader(ctx context.Context) (io.ReadCloser, error)
}

// Busy says a release is being stored while it was asked for: the
// client should ask again shortly (a client sees 503).
type Busy struct{ Msg string }

func (e *Busy) Error() string { return e.Msg }

// TofuEntry is one OpenTofu release as TofuDL lists it: its entry in
// api.json, and where the registry holds it. (oci.TofuRelease is the
// release config in the artifact, store.StoredTofu the artifact as read.)
type TofuEntry struct {
	Version names.Version
	// Files are the release's file names, as TofuDL lists them.
	Files []string
	// Root is nil for a release an origin offers and the registry does
	// not hold.
	Root *Root
}

// Tofu is a source of OpenTofu releases (TofuDL).
type Tofu interface {
	// TofuVersions lists the versions held or offered.
	TofuVersions(ctx context.Context) (Listing, error)
	// TofuRelease reads release v's entry: NotFound (marked ErrNotHeld)
	// when it is not held or offered, Denied when it may not be served.
	TofuRelease(ctx context.Context, v names.Version) (*TofuEntry, error)
	// OpenTofuFile is file name of release v.
	OpenTofuFile(ctx context.Context, v names.Version, name string) (*Blob, error)
}

// Rules is what pull-through asks of the policy file: the versions of an
// address (of a policy kind) its version constraints allow, and whether
// the rule deciding the address reads facts of a stored release
// (min_age, signers), named. Under such a rule nothing is handed out from
// an origin directly: pull-through stores first, and the rule decides on
// what was stored.
type Rules interface {
	Allowed(kind names.Kind, address string, vs []names.Version) []names.Version
	FactsRule(kind names.Kind, address string) (rule string, ok bool)
}
