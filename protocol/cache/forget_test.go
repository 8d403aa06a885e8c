package cache

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// Forget drops a value and a remembered failure: the next Get fetches.
func TestForget(t *testing.T) {
	c := New[int](Options{})
	fetches := 0
	fetch := func(context.Context) (int, int64, error) { fetches++; return fetches, 1, nil }
	ctx := context.Background()
	if r, _ := c.Get(ctx, "k", fetch); r.Val != 1 {
		t.Fatalf("first Get: %d", r.Val)
	}
	if r, _ := c.Get(ctx, "k", fetch); r.Val != 1 || fetches != 1 {
		t.Fatalf("cached Get: %d after %d fetches", r.Val, fetches)
	}
	c.Forget("k")
	if r, _ := c.Get(ctx, "k", fetch); r.Val != 2 || c.Len() != 1 || c.Cost() == 0 {
		t.Errorf("Get after Forget: %d, %d entries, cost %d", r.Val, c.Len(), c.Cost())
	}
	boom := errors.New("boom")
	if _, err := c.Get(ctx, "e", func(context.Context) (int, int64, error) { return 0, 0, boom }); err != boom {
		t.Fatal(err)
	}
	c.Forget("e")
	if r, err := c.Get(ctx, "e", fetch); err != nil || r.Val != 3 {
		t.Errorf("a forgotten failure: %d, %v", r.Val, err)
	}
	c.Forget("absent")
	c.Forget("k")
	c.Forget("e")
	if c.Len() != 0 || c.Cost() != 0 {
		t.Errorf("after forgetting all: %d entries, cost %d", c.Len(), c.Cost())
	}
}

// ForgetMatching drops the matching entries, and a fetch under way for a
// matching key hands its (possibly outdated) value to its waiter but
// does not keep it: the next Get fetches anew.
func TestForgetMatchingDetachesFetches(t *testing.T) {
	c := New[string](Options{})
	ctx := context.Background()
	for _, k := range []string{"a:1", "a:2", "b:1"} {
		c.Get(ctx, k, func(context.Context) (string, int64, error) { return "old " + k, 1, nil })
	}
	started, release := make(chan struct{}), make(chan struct{})
	got := make(chan string)
	go func() {
		r, _ := c.Get(ctx, "a:3", func(context.Context) (string, int64, error) {
			close(started)
			<-release
			return "read before", 1, nil
		})
		got <- r.Val
	}()
	<-started
	if n := c.ForgetMatching(func(k string) bool { return strings.HasPrefix(k, "a:") }); n != 2 {
		t.Fatalf("forgot %d entries, want 2", n)
	}
	close(release)
	if v := <-got; v != "read before" {
		t.Fatalf("the waiter got %q", v)
	}
	if _, ok := c.Peek("a:3"); ok {
		t.Fatal("a fetch detached by ForgetMatching was kept")
	}
	if _, ok := c.Peek("b:1"); !ok || c.Len() != 1 {
		t.Fatalf("the unmatched entry went too (%d entries)", c.Len())
	}
	if r, _ := c.Get(ctx, "a:1", func(context.Context) (string, int64, error) { return "new", 1, nil }); r.Val != "new" {
		t.Fatalf("after ForgetMatching: %q", r.Val)
	}
}
