package cache

import (
	"context"
	"errors"
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
