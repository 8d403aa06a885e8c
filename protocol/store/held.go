package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repolist"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// What the repositories a template maps hold, listed from a cold start
// (docs/catalogue.md, "What is held").

// Held lists the repositories a template maps that a registry's catalog
// (or an OCI layout tree) holds.
type Held struct {
	// Values are the template's placeholder values for each repository
	// it matches (repotemplate.Template.Match), in the order of
	// Repositories: sorted by repository name, without duplicates. A
	// repository listed that holds no tags is there too.
	Values       []map[string]string
	Repositories []oci.Reference
	// CanList is false when the registry does not list its repositories
	// (GHCR, Docker Hub, ECR without ecr:DescribeRepositories) or the
	// template's registry host is itself a placeholder; Reason then says
	// why, e.g. "ghcr.io does not list repositories (GET /v2/_catalog:
	// 403 DENIED)".
	CanList bool
	Reason  string
	// Indexed is set when the held-address index (Options.HeldIndex) was
	// read and its entries are included. Where the catalog does not list,
	// the index alone is not complete (what was pushed without recording
	// it is missing): CanList stays false, and Reason says the listing
	// is the index's.
	Indexed bool
	// At is when the listing was read.
	At time.Time
}

// Held lists what the repositories tpl maps hold: the registry's catalog
// below the template's fixed prefix (tpl.ListPrefix), or the OCI layouts
// below it, each repository the template Matches. It is cached for
// TagTTL, then revalidated in the background (served up to MaxStale past
// it meanwhile), one listing shared by concurrent callers; a registry
// that does not list is a Held without CanList, cached the same way. A
// registry that fails (5xx, unreachable, beyond oci-tofu's bounds) is an
// *Error classified like other reads, remembered for FailureTTL.
func (s *Store) Held(ctx context.Context, tpl *repotemplate.Template) (Held, error) {
	res, err := s.held.Get(ctx, tpl.String(), func(ctx context.Context) (Held, int64, error) {
		h, err := s.listHeld(ctx, tpl)
		return h, h.cost(), err
	})
	if err != nil {
		return Held{}, err
	}
	h := res.Val
	h.At = res.Fetched
	return h, nil
}

// listHeld reads the listing Held caches: the catalog, then the
// held-address index where one is kept on the template's registry.
func (s *Store) listHeld(ctx context.Context, tpl *repotemplate.Template) (Held, error) {
	host, prefix := tpl.ListPrefix()
	if host == "" {
		return Held{Reason: fmt.Sprintf("the repository template %s has a placeholder in its registry host: no one registry to list", tpl)}, nil
	}
	// The index repository itself is held, but holds no provider or module.
	h := heldList{tpl: tpl, host: host, prefix: prefix, byName: map[string]bool{s.opts.HeldIndex.Name(): true}}
	err := repolist.List(ctx, s.opts.Client, host, prefix, func(repos []string) error {
		h.addAll(repos)
		return nil
	})
	switch {
	case errors.Is(err, repolist.ErrCannotList):
		h.Reason = err.Error()
	case err != nil:
		return Held{}, &Error{Failure: oci.Classify(err), Repo: heldName(host, prefix), What: listingRepositories, Err: err}
	default:
		h.CanList = true
	}
	if idx := s.opts.HeldIndex; !idx.Layout && idx.Registry == host {
		if err := s.mergeHeldIndex(ctx, &h); err != nil {
			return Held{}, err
		}
		if !h.CanList {
			h.Reason = fmt.Sprintf("listed from the held-address index %s, as %s; repositories pushed without --catalog-repository are not shown", idx.Name(), h.Reason)
		}
	}
	if h.CanList {
		h.Reason = ""
	}
	h.sort()
	return h.Held, nil
}

// heldList collects a Held: the repositories tpl matches, once each.
type heldList struct {
	Held
	tpl          *repotemplate.Template
	host, prefix string
	byName       map[string]bool
}

// addAll adds the repositories of a listing of host that tpl matches;
// it returns the names it added.
func (h *heldList) addAll(repos []string) []string {
	var added []string
	for _, name := range repos {
		ref := heldReference(h.host, name)
		if h.byName[ref.Name()] || !strings.HasPrefix(name, h.prefix) {
			continue
		}
		if vals, ok := h.tpl.Match(ref); ok {
			h.byName[ref.Name()] = true
			h.Repositories = append(h.Repositories, ref)
			h.Values = append(h.Values, vals)
			added = append(added, name)
		}
	}
	return added
}

// mergeHeldIndex adds the index's entries to h and, with
// RepairHeldIndex, writes the entries the catalog found that the index
// lacks (at most maxHeldRepairs a listing; a write that fails is logged
// and ends that listing's repairs: a proxy without push rights on the
// index tries once a listing, not once a repository).
func (s *Store) mergeHeldIndex(ctx context.Context, h *heldList) error {
	idx := s.opts.HeldIndex
	fromCatalog := slices.Clone(h.Repositories)
	repo, err := s.opts.Client.OpenReadOnly(ctx, idx)
	var entries []string
	if err == nil {
		entries, err = oci.ListHeldEntries(ctx, repo)
	}
	if err != nil {
		return &Error{Failure: oci.Classify(err), Repo: idx.Name(), What: readingHeldIndex, Err: err}
	}
	h.addAll(entries)
	h.Indexed = true
	if !s.opts.RepairHeldIndex {
		return nil
	}
	indexed := map[string]bool{}
	for _, e := range entries {
		indexed[e] = true
	}
	repaired := 0
	for _, r := range fromCatalog {
		if indexed[r.Repository] || repaired >= maxHeldRepairs {
			continue
		}
		repaired++
		if err := s.writeHeldEntry(ctx, r.Repository); err != nil {
			s.opts.Logger.Warn("could not add a repository to the held-address index", "index", idx.Name(), "repository", r.Name(), "error", err)
			return nil
		}
	}
	return nil
}

// maxHeldRepairs bounds the index entries one listing writes.
const maxHeldRepairs = 1000

func (s *Store) writeHeldEntry(ctx context.Context, repository string) error {
	index, err := s.opts.Client.Open(s.opts.HeldIndex)
	if err != nil {
		return err
	}
	return oci.WriteHeldEntry(ctx, index, repository)
}

// heldReference is the repository a listing of host names.
func heldReference(host, name string) oci.Reference {
	if host == oci.LayoutPrefix {
		return oci.Reference{Layout: true, Repository: name}
	}
	return oci.Reference{Registry: host, Repository: name}
}

// heldName names what a listing reads, in errors.
func heldName(host, prefix string) string {
	if host == oci.LayoutPrefix {
		return host + prefix
	}
	return host + "/" + prefix
}

// sort orders the repositories by name, their values with them.
func (h *Held) sort() {
	idx := make([]int, len(h.Repositories))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(h.Repositories[a].Name(), h.Repositories[b].Name()) })
	repos := make([]oci.Reference, len(idx))
	vals := make([]map[string]string, len(idx))
	for i, j := range idx {
		repos[i], vals[i] = h.Repositories[j], h.Values[j]
	}
	h.Repositories, h.Values = repos, vals
}

// cost is about the memory a Held takes: per repository its reference's
// strings and a small map of values.
func (h Held) cost() int64 {
	n := int64(128 + len(h.Reason))
	for i, r := range h.Repositories {
		n += 96 + int64(len(r.Registry)+len(r.Repository))
		n += 200
		for k, v := range h.Values[i] {
			n += 32 + int64(len(k)+len(v))
		}
	}
	return n
}
