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
