package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
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

// listHeld reads the listing Held caches.
func (s *Store) listHeld(ctx context.Context, tpl *repotemplate.Template) (Held, error) {
	host, prefix := tpl.ListPrefix()
	if host == "" {
		return Held{Reason: fmt.Sprintf("the repository template %s has a placeholder in its registry host: no one registry to list", tpl)}, nil
	}
	byName := map[string]int{}
	var h Held
	err := s.opts.Client.ListRepositories(ctx, host, prefix, func(repos []string) error {
		for _, name := range repos {
			ref := heldReference(host, name)
			if _, dup := byName[ref.Name()]; dup {
				continue
			}
			if vals, ok := tpl.Match(ref); ok {
				byName[ref.Name()] = len(h.Repositories)
				h.Repositories = append(h.Repositories, ref)
				h.Values = append(h.Values, vals)
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, oci.ErrCannotList):
		return Held{Reason: err.Error()}, nil
	case err != nil:
		return Held{}, &Error{Failure: oci.Classify(err), Repo: heldName(host, prefix), What: listingRepositories, Err: err}
	}
	h.CanList = true
	h.sort()
	return h, nil
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
