package prune

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
)

// Plan is what pruning a repository does: every version, kept (and why)
// or to be deleted (and what that frees).
type Plan struct {
	Repository Repository
	// Versions are newest first.
	Versions []Entry
	// IndexNote, after Apply, says why the repository's version index
	// still names versions deleted ("" when it names none).
	IndexNote string
}

// Entry is one version in a plan.
type Entry struct {
	Verdict
	Root ocispec.Descriptor
	// Deletes are the manifests deleting the version deletes, in order
	// (tree.order), leaving out those a kept tag's tree shares.
	Deletes []ocispec.Descriptor
	// Bytes are the sizes of the distinct manifests and blobs the version
	// references that no kept tag's tree references.
	Bytes int64
	// Deleted are the manifests Apply deleted (or found gone); Err why it
	// stopped short of Deletes.
	Deleted []digest.Digest
	Err     error

	sizes map[digest.Digest]int64 // what Bytes sums, for Total
}

// Goes reports whether the version is to be deleted.
func (e *Entry) Goes() bool { return len(e.Kept) == 0 }

// Total is the versions to delete and the distinct bytes they free.
func (p *Plan) Total() (versions int, bytes int64) {
	seen := map[digest.Digest]bool{}
	for _, e := range p.Versions {
		if !e.Goes() {
			continue
		}
		versions++
		for d, size := range e.sizes {
			if !seen[d] {
				seen[d] = true
				bytes += size
			}
		}
	}
	return versions, bytes
}

// PlanOptions say how to read the repository and judge its versions.
type PlanOptions struct {
	// Name is the repository as the registry holds it (host/path).
	Name string
	// Addresses are what the policy matches for the kind of artifact the
	// repository holds (read from its versions' artifact types).
	Addresses func(kind names.Kind) ([]string, error)
	Rules     Rules
}

// walks bounds the trees read at once.
const walks = 4

// MakePlan reads every tag of repo and the tree of each, judges the
// versions by the rules, and plans what deleting the others takes. A
// version is also kept when deleting its manifest would take another tag
// with it (a pointer such as latest, or a kept version tag naming the
// same manifest). Nothing is written.
func MakePlan(ctx context.Context, repo oci.ReadOnlyRepository, opts PlanOptions) (*Plan, error) {
	tags, err := oci.ListTags(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("%s: listing tags: %w", opts.Name, err)
	}
	w := &walker{repo: repo, attached: map[string][]string{}}
	var versions []Version
	var pointers []string
	for _, tag := range tags {
		if v, ok := names.VersionFromTag(tag); ok {
			versions = append(versions, Version{Tag: tag, Version: v})
		} else if key, ok := attachmentSubject(tag); ok {
			w.attached[key] = append(w.attached[key], tag)
		} else if tag != versionindex.Tag { // a hint naming every version: it keeps none
			pointers = append(pointers, tag)
		}
	}
	trees, err := walkTags(ctx, w, append(tagsOf(versions), pointers...))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Name, err)
	}
	for i := range versions {
		versions[i].Pushed = trees[versions[i].Tag].created
	}
	kind, err := kindOf(versions, trees)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Name, err)
	}
	r := Repository{Name: opts.Name, Kind: kind}
	if len(versions) > 0 {
		if r.Addresses, err = opts.Addresses(kind); err != nil {
			return nil, err
		}
	}
	p := &Plan{Repository: r}
	for _, v := range Decide(r, versions, opts.Rules) {
		p.Versions = append(p.Versions, Entry{Verdict: v, Root: trees[v.Tag].root})
	}
	keepWhatSharesATag(p, pointers, trees)
	p.measure(pointers, trees)
	return p, nil
}

func tagsOf(versions []Version) []string {
	out := make([]string, len(versions))
	for i, v := range versions {
		out[i] = v.Tag
	}
	return out
}

// walkTags reads the tree of each tag, a few at a time.
func walkTags(ctx context.Context, w *walker, tags []string) (map[string]*tree, error) {
	trees := make(map[string]*tree, len(tags))
	var mu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(walks)
	for _, tag := range tags {
		g.Go(func() error {
			root, err := w.repo.Resolve(ctx, tag)
			if err != nil {
				return fmt.Errorf("resolving %s: %w", tag, err)
			}
			t, err := w.walk(ctx, root)
			if err != nil {
				return fmt.Errorf("reading %s (%s): %w", tag, root.Digest, err)
			}
			mu.Lock()
			trees[tag] = t
			mu.Unlock()
			return nil
		})
	}
	return trees, g.Wait()
}

// kinds are the artifact types prune knows, by kind.
var kinds = map[string]names.Kind{
	oci.ArtifactTypeProvider:    names.KindProvider,
	oci.ArtifactTypeModule:      names.KindModule,
	oci.ArtifactTypeTofuRelease: names.KindTofu,
}

// kindOf is what the versions are; a repository whose versions are not
// all providers, all modules or all OpenTofu releases is left alone:
// the rules (per major version, lock files, the policy) are about those.
func kindOf(versions []Version, trees map[string]*tree) (names.Kind, error) {
	var kind names.Kind
	for _, v := range versions {
		t := trees[v.Tag]
		k, ok := kinds[t.artifactType]
		switch {
		case !ok:
			return "", fmt.Errorf("version %s is no provider, module or OpenTofu release (artifact type %q): prune leaves this repository alone", v.Tag, t.artifactType)
		case kind != "" && k != kind:
			return "", fmt.Errorf("version %s is a %s where others are %ss: prune leaves this repository alone", v.Tag, k, kind)
		}
		kind = k
	}
	return kind, nil
}

// keepWhatSharesATag keeps a version whose manifest another tag that
// stays names: the registry deletes a manifest with every tag naming it,
// so deleting the version would take that tag too.
func keepWhatSharesATag(p *Plan, pointers []string, trees map[string]*tree) {
	for _, tag := range pointers {
		for i := range p.Versions {
			e := &p.Versions[i]
			if e.Root.Digest == trees[tag].root.Digest {
				e.Kept = append(e.Kept, "also tagged "+tag)
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for i := range p.Versions {
			for j := range p.Versions {
				a, b := &p.Versions[i], &p.Versions[j]
				if a.Goes() && !b.Goes() && a.Root.Digest == b.Root.Digest {
					a.Kept = append(a.Kept, "same manifest as "+b.Tag)
					changed = true
				}
			}
		}
	}
}

// measure fills in what deleting each version deletes and frees: its
// tree, less what any kept tag's tree holds.
func (p *Plan) measure(pointers []string, trees map[string]*tree) {
	kept := map[digest.Digest]bool{}
	keep := func(t *tree) {
		for d := range t.sizes {
			kept[d] = true
		}
	}
	for _, tag := range pointers {
		keep(trees[tag])
	}
	for _, e := range p.Versions {
		if !e.Goes() {
			keep(trees[e.Tag])
		}
	}
	for i := range p.Versions {
		e := &p.Versions[i]
		if !e.Goes() {
			continue
		}
		t := trees[e.Tag]
		e.sizes = map[digest.Digest]int64{}
		for d, size := range t.sizes {
			if !kept[d] {
				e.sizes[d] = size
				e.Bytes += size
			}
		}
		e.Deletes = slices.DeleteFunc(slices.Clone(t.order), func(d ocispec.Descriptor) bool { return kept[d.Digest] })
	}
}
