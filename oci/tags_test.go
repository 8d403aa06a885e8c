package oci

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"oras.land/oras-go/v2/content/memory"
)

// pagedRepo serves tag pages as a registry would, forever if loop is set.
type pagedRepo struct {
	memRepo
	pages [][]string
	loop  bool
	sent  int
}

func (r *pagedRepo) Tags(_ context.Context, _ string, fn func([]string) error) error {
	for i := 0; i < len(r.pages); i++ {
		r.sent++
		if err := fn(r.pages[i]); err != nil {
			return err
		}
		if r.loop && i == len(r.pages)-1 {
			i = -1
		}
	}
	return nil
}

// ListTags follows pages within bounds: a loop ends at its first repeated
// page, a registry that pages forever or lists too many tags is refused.
func TestListTagsBounds(t *testing.T) {
	ctx := context.Background()
	repo := &pagedRepo{memRepo: memRepo{memory.New()}, pages: [][]string{{"1.0.0", "1.1.0"}, {"2.0.0"}}}
	tags, err := ListTags(ctx, repo)
	if err != nil || strings.Join(tags, ",") != "1.0.0,1.1.0,2.0.0" {
		t.Fatalf("%v %v", tags, err)
	}
	repo.loop, repo.sent = true, 0
	if _, err := ListTags(ctx, repo); Classify(err) != FailureInvalid || !strings.Contains(err.Error(), "loop") || repo.sent != 3 {
		t.Fatalf("a paging loop: %v after %d pages", err, repo.sent)
	}
	// New tags on every page, forever: refused at the page bound.
	var pages [][]string
	for i := 0; i < 2*MaxTagPages; i++ {
		pages = append(pages, []string{fmt.Sprintf("0.0.%d", i)})
	}
	repo = &pagedRepo{memRepo: memRepo{memory.New()}, pages: pages}
	if _, err := ListTags(ctx, repo); Classify(err) != FailureInvalid || repo.sent != MaxTagPages+1 {
		t.Fatalf("endless pages: %v after %d pages", err, repo.sent)
	}
	// Too many tags in few pages.
	big := make([]string, MaxTags+1)
	for i := range big {
		big[i] = fmt.Sprintf("t%d", i)
	}
	repo = &pagedRepo{memRepo: memRepo{memory.New()}, pages: [][]string{big}}
	if _, err := ListTags(ctx, repo); Classify(err) != FailureInvalid {
		t.Fatalf("too many tags: %v", err)
	}
}

// ListTagsBefore stops reading a lexically ordered list once it has
// passed its bound (the tag schemas' sha256-<hex> tags are not read), and
// reads a list seen out of order to its end, so that no tag before the
// bound is ever missed.
func TestListTagsBefore(t *testing.T) {
	ctx := context.Background()
	schema := func(i int) string { return fmt.Sprintf("sha256-%064x", i) }
	schemas := func(from, n int) []string {
		var out []string
		for i := from; i < from+n; i++ {
			out = append(out, schema(i))
		}
		return out
	}
	ordered := [][]string{
		{"1.0.0", "1.1.0", "2.0.0"},
		append([]string{"latest", "oci-tofu.pulled-through"}, schemas(1, 200)...),
		schemas(201, 100), // past the bound by 300: the listing stops here
		schemas(301, 100),
		{schema(1000) + ".att", schema(1001)},
	}
	repo := &pagedRepo{memRepo: memRepo{memory.New()}, pages: ordered}
	var paged []string
	tags, err := ListTagsBefore(ctx, repo, TagSchemaTags, func(added []string) { paged = append(paged, added...) })
	want := "1.0.0,1.1.0,2.0.0,latest,oci-tofu.pulled-through"
	if err != nil || strings.Join(tags, ",") != want || strings.Join(paged, ",") != want {
		t.Fatalf("ordered: %v %v (paged %v), want %s", tags, err, paged, want)
	}
	if repo.sent != 3 {
		t.Errorf("ordered: read %d pages, want 3 (the third runs %d tags past the bound)", repo.sent, pastBound)
	}
	versions, err := ListVersions(ctx, &pagedRepo{memRepo: memRepo{memory.New()}, pages: ordered})
	if err != nil || fmt.Sprint(versions) != "[1.0.0 1.1.0 2.0.0]" {
		t.Errorf("ListVersions: %v %v", versions, err)
	}

	for name, pages := range map[string][][]string{
		// A version after the schema tags: the list is out of order.
		"a later page goes back": {{"1.0.0", schema(1)}, {"0.9.0", schema(2)}},
		// Within one page.
		"a page out of order": {{schema(1), "1.0.0"}, {"3.0.0"}},
		// Each page ordered, but not across them.
		"pages out of order": {{"2.0.0", schema(1)}, {"1.0.0"}},
		// Tags as they were made: each version, then its schema tags;
		// ordered up to each next version.
		"made order": {append([]string{"1.0.0"}, schemas(1, 15)...), append([]string{"1.1.0"}, schemas(16, 15)...), append([]string{"0.1.0"}, schemas(31, 300)...)},
	} {
		repo := &pagedRepo{memRepo: memRepo{memory.New()}, pages: pages}
		tags, err := ListTagsBefore(ctx, repo, TagSchemaTags, nil)
		var want []string
		for _, p := range pages {
			for _, tag := range p {
				if tag < TagSchemaTags {
					want = append(want, tag)
				}
			}
		}
		if err != nil || strings.Join(tags, ",") != strings.Join(want, ",") || repo.sent != len(pages) {
			t.Errorf("%s: %v %v after %d of %d pages, want %v", name, tags, err, repo.sent, len(pages), want)
		}
	}

	// Without a bound, every tag, every page.
	repo = &pagedRepo{memRepo: memRepo{memory.New()}, pages: ordered}
	if tags, err := ListTags(ctx, repo); err != nil || len(tags) != 407 || repo.sent != len(ordered) {
		t.Errorf("ListTags: %d tags %v after %d pages", len(tags), err, repo.sent)
	}
}
