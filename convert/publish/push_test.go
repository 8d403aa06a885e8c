package publish_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/publish"
	"github.com/oci-tofu/oci-tofu/oci"
)

// events is what happened during a push, in order.
type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, s)
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.got)
}

// fakeRelease pushes nothing: up to date, or its BeforeTag then a tag.
type fakeRelease struct {
	upToDate bool
	ev       *events
}

func (f fakeRelease) Push(ctx context.Context, _ oci.Repository, opts oci.PushOptions, _ ...string) (oci.PushResult, error) {
	if f.upToDate {
		return oci.PushResult{UpToDate: true}, nil
	}
	if err := opts.BeforeTag(ctx, ocispec.Descriptor{}); err != nil {
		return oci.PushResult{}, err
	}
	f.ev.add("tag")
	return oci.PushResult{}, nil
}

// fakeAttester records its calls; whileTagging waits for the tag.
type fakeAttester struct {
	ev                  *events
	beforeErr, tagErr   error
	tagged              chan struct{}
	nothingWhileTagging bool
}

func (a fakeAttester) BeforeTag(context.Context, oci.Repository, ocispec.Descriptor) (func(context.Context) error, error) {
	a.ev.add("before")
	if a.beforeErr != nil || a.nothingWhileTagging {
		return nil, a.beforeErr
	}
	return func(context.Context) error {
		<-a.tagged
		a.ev.add("while tagging")
		return a.tagErr
	}, nil
}

func (a fakeAttester) UpToDate(context.Context, oci.Repository, ocispec.Descriptor) error {
	a.ev.add("up to date")
	return nil
}

// taggedRelease closes tagged once it has tagged.
type taggedRelease struct {
	fakeRelease
	tagged chan struct{}
}

func (r taggedRelease) Push(ctx context.Context, repo oci.Repository, opts oci.PushOptions, also ...string) (oci.PushResult, error) {
	res, err := r.fakeRelease.Push(ctx, repo, opts, also...)
	close(r.tagged)
	return res, err
}

func TestPushOrder(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name              string
		upToDate          bool
		beforeErr, tagErr error
		nothingLeft       bool
		want              []string
		wantErr, wantAtt  error
	}{
		{name: "pushed", want: []string{"before", "caller's before", "tag", "while tagging"}},
		{name: "all before", nothingLeft: true, want: []string{"before", "caller's before", "tag"}},
		{name: "up to date", upToDate: true, want: []string{"up to date"}},
		{name: "attesting before fails", beforeErr: boom, want: []string{"before"}, wantErr: boom},
		{name: "attesting while tagging fails", tagErr: boom, want: []string{"before", "caller's before", "tag", "while tagging"}, wantAtt: boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := &events{}
			tagged := make(chan struct{})
			rel := taggedRelease{fakeRelease{upToDate: tc.upToDate, ev: ev}, tagged}
			att := fakeAttester{ev: ev, beforeErr: tc.beforeErr, tagErr: tc.tagErr, tagged: tagged, nothingWhileTagging: tc.nothingLeft}
			opts := oci.PushOptions{BeforeTag: func(context.Context, ocispec.Descriptor) error { ev.add("caller's before"); return nil }}
			_, err, attestErr := publish.Push(ctx, nil, rel, opts, att)
			if !errors.Is(err, tc.wantErr) || !errors.Is(attestErr, tc.wantAtt) {
				t.Errorf("err %v, attestErr %v; want %v, %v", err, attestErr, tc.wantErr, tc.wantAtt)
			}
			if got := ev.list(); !slices.Equal(got, tc.want) {
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
}
