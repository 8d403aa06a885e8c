package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
)

// The held-address index: for registries that do not list their
// repositories (GHCR, Docker Hub, ECR without ecr:DescribeRepositories),
// one repository whose tags name the repositories held beside it, one tag
// each (docs/catalogue.md, "What is held"). Writing an entry creates a
// tag and nothing else, so concurrent writers of different entries never
// conflict and writers of the same entry agree.

// ArtifactTypeHeldEntry is the artifactType of an index entry's manifest.
const ArtifactTypeHeldEntry = "application/vnd.oci-tofu.held.v1"

// AnnotationHeldRepository names, on a hashed entry's manifest, the
// repository its tag stands for.
const AnnotationHeldRepository = "org.oci-tofu.held.repository"

// Entry tags: "R" and the repository path with each "/" as "S"
// (repository paths are lower-case, so the encoding reverses), or, for a
// path too long for a tag, "H" and the hex SHA-256 of the path, whose
// manifest's annotation names it.
const (
	heldPlainPrefix  = "R"
	heldHashedPrefix = "H"
	maxTagLength     = 128
)

// HeldEntryTag is the index tag of the repository path repository
// ("acme/providers/hashicorp/aws" → "RacmeSprovidersShashicorpSaws").
func HeldEntryTag(repository string) string {
	if t := heldPlainPrefix + strings.ReplaceAll(repository, "/", "S"); len(t) <= maxTagLength {
		return t
	}
	sum := sha256.Sum256([]byte(repository))
	return heldHashedPrefix + hex.EncodeToString(sum[:])
}

// heldPlainRepository decodes a plain entry tag; ok is false for any
// other tag.
func heldPlainRepository(tag string) (string, bool) {
	rest, ok := strings.CutPrefix(tag, heldPlainPrefix)
	if !ok {
		return "", false
	}
	repo := strings.ReplaceAll(rest, "S", "/")
	if !validRepositoryPath(repo) || HeldEntryTag(repo) != tag {
		return "", false
	}
	return repo, true
}

func isHashedEntry(tag string) bool {
	rest, ok := strings.CutPrefix(tag, heldHashedPrefix)
	return ok && len(rest) == 2*sha256.Size && lowerHex(rest)
}

func validRepositoryPath(repo string) bool {
	return repo != "" && (registry.Reference{Registry: "h", Repository: repo}).ValidateRepository() == nil
}

// heldEntryManifest is an entry's manifest: the empty config and one
// empty layer, with the repository named (hashed entries) or not (every
// plain entry shares one manifest).
func heldEntryManifest(repository string) (Manifest, error) {
	m := ocispec.Manifest{ArtifactType: ArtifactTypeHeldEntry, Config: ocispec.DescriptorEmptyJSON,
		Layers: []ocispec.Descriptor{ocispec.DescriptorEmptyJSON}}
	if repository != "" {
		m.Annotations = map[string]string{AnnotationHeldRepository: repository}
	}
	return EncodeManifest(m)
}

// WriteHeldEntry records in the index repository that repository (a path
// on the index's registry) is held: it pushes the empty blob when
// missing, then the entry's manifest under its tag. Writing an entry
// again changes nothing.
func WriteHeldEntry(ctx context.Context, index Repository, repository string) error {
	if !validRepositoryPath(repository) {
		return fmt.Errorf("held-address index: %q is not a repository path", repository)
	}
	tag := HeldEntryTag(repository)
	named := ""
	if isHashedEntry(tag) {
		named = repository
	}
	m, err := heldEntryManifest(named)
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		_, err = oras.TagBytes(ctx, index, m.Descriptor.MediaType, m.Bytes, tag)
		if !blobUnknown(err) && !errors.Is(err, errdef.ErrNotFound) || attempt == heldWriteAttempts {
			break
		}
		// The first entry, or other writers' uploads of the empty blob
		// not committed yet (Distribution refuses concurrent commits of
		// one blob now and then): upload it ourselves, then tag again.
		if perr := pushEmptyBlob(ctx, index); perr != nil && attempt == heldWriteAttempts-1 {
			return fmt.Errorf("held-address index: %w", perr)
		}
		if err := sleepContext(ctx, time.Duration(attempt)*50*time.Millisecond); err != nil {
			return err
		}
	}
	if err != nil {
		return fmt.Errorf("held-address index: writing %s: %w", tag, err)
	}
	return nil
}

// MaxHashedHeldEntries bounds the hashed entries a listing reads, one
// manifest request each: paths too long for a tag are rare, and tags
// anyone with push rights on the index adds cost the reader a request
// apiece (MaxTags would allow 100,000, read one after another).
const MaxHashedHeldEntries = 1000

// heldWriteAttempts bounds the tries of one entry write.
const heldWriteAttempts = 4

// pushEmptyBlob uploads the empty JSON blob, whether or not the registry
// says it has it (another writer's upload may not be committed yet).
func pushEmptyBlob(ctx context.Context, repo Repository) error {
	err := repo.Push(ctx, ocispec.DescriptorEmptyJSON, bytes.NewReader(ocispec.DescriptorEmptyJSON.Data))
	if errors.Is(err, errdef.ErrAlreadyExists) {
		return nil
	}
	return err
}

// ListHeldEntries reads the index repository's entries: the repository
// paths its tags name, in the order of its tag list, within ListTags'
// bounds (MaxTags, as many as MaxRepositories), of which at most
// MaxHashedHeldEntries hashed entries (more fail the listing, Invalid,
// before any is read). Tags that are no entry
// are ignored; a hashed entry is read (its manifest's annotation, which
// must hash to its tag). An index that does not exist yet holds no
// entries.
func ListHeldEntries(ctx context.Context, index ReadOnlyRepository) ([]string, error) {
	tags, err := ListTags(ctx, index)
	if errors.Is(err, errdef.ErrNotFound) || IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if n := countHashedEntries(tags); n > MaxHashedHeldEntries {
		return nil, Invalid("held-address index: %d hashed entries, more than the %d a listing reads (tags H and 64 hex digits, one manifest request each)", n, MaxHashedHeldEntries)
	}
	var out []string
	for _, t := range tags {
		if repo, ok := heldPlainRepository(t); ok {
			out = append(out, repo)
			continue
		}
		if !isHashedEntry(t) {
			continue
		}
		repo, err := readHashedEntry(ctx, index, t)
		if err != nil {
			return nil, err
		}
		if repo != "" {
			out = append(out, repo)
		}
	}
	return out, nil
}

// countHashedEntries is how many of tags are hashed entries.
func countHashedEntries(tags []string) int {
	n := 0
	for _, t := range tags {
		if isHashedEntry(t) {
			n++
		}
	}
	return n
}

// readHashedEntry is the repository a hashed entry names, or "" when its
// manifest names none that hashes to its tag.
func readHashedEntry(ctx context.Context, index ReadOnlyRepository, tag string) (string, error) {
	desc, body, err := FetchReference(ctx, index, tag)
	if IsNotFound(err) {
		return "", nil // deleted since the tag list was read
	}
	if err != nil {
		return "", fmt.Errorf("held-address index: reading %s: %w", tag, err)
	}
	m, err := DecodeManifest(desc, body)
	if err != nil || m.ArtifactType != ArtifactTypeHeldEntry {
		return "", nil
	}
	repo := m.Annotations[AnnotationHeldRepository]
	if !validRepositoryPath(repo) || HeldEntryTag(repo) != tag {
		return "", nil
	}
	return repo, nil
}
