package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// A repository's tag list (Repo.tags, HasTag) and the versions OpenTofu's
// oci_mirror reads in it (Listing, Versions).

// tags lists the repository's tags before oci.TagSchemaTags (versions,
// pointers, the pull-through mark; not the tag schemas' sha256-<hex>
// tags, whose pages are not read where the registry's order allows:
// oci.ListTagsBefore), cached for TagTTL, then revalidated in the
// background, with the time they were read, calling page (when not nil)
// with each page's new tags when this call reads the list itself (not
// when the list is cached or another request is reading it) and ctx is
// not done.
func (r *Repo) tags(ctx context.Context, page func(added []string)) ([]string, time.Time, error) {
	l, at, err := r.tagList(ctx, page)
	if err != nil {
		return nil, at, err
	}
	return l.tags, at, nil
}

// tagList is what tags reads, with the versions parsed once per read of
// the list (not once per request: a catalogue search asks for every
// repository's versions).
func (r *Repo) tagList(ctx context.Context, page func(added []string)) (*tagList, time.Time, error) {
	repo, err := r.open(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	res, err := r.s.tags.Get(ctx, r.name, func(fctx context.Context) (*tagList, int64, error) {
		tags, err := oci.ListTagsBefore(fctx, repo, oci.TagSchemaTags, func(added []string) { // bounded: tags, pages, no paging loop
			if page != nil && ctx.Err() == nil {
				page(added)
			}
		})
		if err != nil {
			return nil, 0, err
		}
		l := &tagList{tags: tags, versions: listVersions(tags)}
		if len(l.versions.Refused) > 0 {
			r.s.opts.Logger.Warn("tags that look like versions but are none are left out", "repository", r.name, "tags", fmt.Sprint(l.versions.Refused))
		}
		return l, l.cost(), nil
	})
	if err != nil {
		return nil, time.Time{}, r.fail(err, listing)
	}
	return res.Val, res.Fetched, nil
}

// tagList is a repository's tags and the versions they stand for, shared
// by every reader of the cache: nobody changes it.
type tagList struct {
	tags     []string
	versions Listing
}

// cost is about what l holds: the tags, and a version's few words each.
func (l *tagList) cost() int64 {
	return stringsCost(l.tags) + int64(len(l.versions.Versions))*96
}

// listing is a copy of l's versions that its caller may change.
func (l *tagList) listing() Listing {
	return Listing{Versions: slices.Clone(l.versions.Versions), Unresolvable: cloneOrNil(l.versions.Unresolvable), Refused: cloneOrNil(l.versions.Refused)}
}

// cloneOrNil is a copy of m, nil when m is empty (a nil map reads as an
// empty one).
func cloneOrNil(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// HasTag reports whether the repository's tag list (read and cached as
// for Versions) holds tag, which must sort before oci.TagSchemaTags; a
// repository that does not exist holds none.
func (r *Repo) HasTag(ctx context.Context, tag string) (bool, error) {
	if tag >= oci.TagSchemaTags {
		return false, fmt.Errorf("HasTag(%q): the listing holds only tags before %q", tag, oci.TagSchemaTags)
	}
	tags, _, err := r.tags(ctx, nil)
	if RepoMissing(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return slices.Contains(tags, tag), nil
}

// Listing is what a repository's tags say about versions, as OpenTofu's
// oci_mirror reads them.
type Listing struct {
	// Versions are the versions the tags stand for (names.ListedVersion:
	// "1.2" counts as 1.2.0, "v1.2.3" and "latest" do not), oldest first.
	Versions names.VersionList
	// Unresolvable maps a listed version whose canonical tag is missing to
	// the tag that stands for it ("1.2.0" → "1.2"): OpenTofu lists such a
	// version and then fails to resolve it.
	Unresolvable map[string]string
	// Refused maps tags that look like versions but are none (a number
	// beyond 64 bits, "1.0.0.0") to why, at most maxRefused of them; they
	// are left out, with a warning.
	Refused map[string]string
	// At is when the tags were read.
	At time.Time
}

// Versions lists the versions OpenTofu would list. A repository holding
// more than oci.MaxVersions of them is refused.
func (r *Repo) Versions(ctx context.Context) (Listing, error) {
	return r.VersionsEarly(ctx, nil)
}

// VersionsShared is Versions without the copy: the Listing is the
// cache's, shared with every reader, and its caller must not change it.
func (r *Repo) VersionsShared(ctx context.Context) (Listing, error) {
	tags, at, err := r.tagList(ctx, nil)
	if err != nil {
		return Listing{At: at}, err
	}
	return r.checked(tags.versions, at)
}

// VersionsEarly is Versions, calling early (when not nil; it must not
// block) with each version whose canonical tag a page of the tag list
// brings, as soon as that page is read, while later pages are still being
// read: the caller can start on what it will need of those versions
// before the listing ends (a Prefetcher). early is called only when this
// call reads the tag list itself; what it is given may still be left out
// of the Listing (a repository beyond oci.MaxVersions).
func (r *Repo) VersionsEarly(ctx context.Context, early func(names.Version)) (Listing, error) {
	var page func([]string)
	if early != nil {
		page = func(added []string) { callCanonical(added, early) }
	}
	tags, at, err := r.tagList(ctx, page)
	if err != nil {
		return Listing{At: at}, err
	}
	return r.checked(tags.listing(), at)
}

// checked is l read at at, unless it holds more versions than oci-tofu
// lists.
func (r *Repo) checked(l Listing, at time.Time) (Listing, error) {
	l.At = at
	if len(l.Versions) > oci.MaxVersions {
		return Listing{At: at}, r.fail(oci.Beyond("the repository has %d version tags, more than the %d oci-tofu lists", len(l.Versions), oci.MaxVersions), "listing versions")
	}
	return l, nil
}

// callCanonical calls fn with the version of every tag that is its
// version's canonical tag (the one OpenTofu resolves).
func callCanonical(tags []string, fn func(names.Version)) {
	for _, t := range tags {
		if v, ok := names.ListedVersion(t); ok && names.TagForVersion(v) == t {
			fn(v)
		}
	}
}

// maxRefused bounds the refused tags a Listing names.
const maxRefused = 10

func listVersions(tags []string) Listing {
	l := Listing{Unresolvable: map[string]string{}, Refused: map[string]string{}}
	listed := map[string]names.Version{}
	canonical := map[string]bool{}
	for _, t := range tags {
		v, ok := names.ListedVersion(t)
		if !ok {
			if looksLikeVersion(t) && len(l.Refused) < maxRefused {
				l.Refused[t] = whyNoVersion(t)
			}
			continue
		}
		key := v.String()
		listed[key] = v
		if names.TagForVersion(v) == t {
			canonical[key] = true
		} else if _, seen := l.Unresolvable[key]; !seen {
			l.Unresolvable[key] = t
		}
	}
	for key, v := range listed {
		l.Versions = append(l.Versions, v)
		if canonical[key] {
			delete(l.Unresolvable, key)
		}
	}
	l.Versions.Sort()
	return l
}

// whyNoVersion says why a tag that looks like a version is none.
func whyNoVersion(tag string) string {
	if _, err := names.ParseVersionLoose(strings.ReplaceAll(tag, "_", "+")); err != nil {
		return err.Error()
	}
	return "not a version OpenTofu lists"
}

// looksLikeVersion reports whether a tag was probably meant as a version:
// digits, a dot and more.
func looksLikeVersion(tag string) bool {
	i := 0
	for i < len(tag) && tag[i] >= '0' && tag[i] <= '9' {
		i++
	}
	return i > 0 && i < len(tag) && tag[i] == '.'
}
