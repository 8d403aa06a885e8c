// Package cliemit sends the events of one command line run (docs/events.md,
// "What the CLI sends"): push and mirror send version.ingested, prune
// --apply version.pruned, to the subscriptions of the same events file
// serve reads. A Sender is opened before the command writes anything (a
// bad file stops it then), the command emits as it goes, and Close waits
// a bounded time for the deliveries, telling stderr what failed: the
// registry was changed whatever becomes of its events.
package cliemit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/prune"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/events/webhook"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
)

// CloseTimeout bounds how long Close waits for the deliveries.
const CloseTimeout = 30 * time.Second

// Sender is the events of one run; a nil *Sender (no events file) sends
// nothing, and all its methods may be called on it.
type Sender struct {
	d        *webhook.Dispatcher
	source   string
	problems *problems
	timeout  time.Duration
}

// Options open a Sender.
type Options struct {
	// File is the subscriptions file (webhook.Load); "" sends nothing.
	File string
	// Source is the events' source attribute; "" is DefaultSource().
	Source string
	// Stderr is where failed deliveries are told; nil is os.Stderr.
	Stderr io.Writer
	// Timeout bounds Close (CloseTimeout when 0); Webhook tunes delivery.
	Timeout time.Duration
	Webhook webhook.Options
}

// Open reads the subscriptions file and starts delivering; without a
// file it is nil (and sends nothing). An error names the file.
func Open(o Options) (*Sender, error) {
	if o.File == "" {
		return nil, nil
	}
	cfg, err := webhook.Load(o.File)
	if err != nil {
		return nil, err
	}
	if o.Source == "" {
		o.Source = DefaultSource()
	} else if err := checkSource(o.Source); err != nil {
		return nil, err
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Timeout <= 0 {
		o.Timeout = CloseTimeout
	}
	p := &problems{w: o.Stderr}
	o.Webhook.Logger = p.logger()
	return &Sender{d: webhook.New(cfg, o.Webhook), source: o.Source, problems: p, timeout: o.Timeout}, nil
}

// DefaultSource is the source of a CLI run's events without
// --events-source: urn:oci-tofu:cli: and the machine's host name.
func DefaultSource() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return "urn:oci-tofu:cli:" + host
}

// checkSource refuses a source CloudEvents would not take (a URI
// reference: no spaces or control characters) or one too long to be a
// name (1 KiB).
func checkSource(s string) error {
	if len(s) > 1024 || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("the events' source %q is not a URI: no spaces or control characters, at most 1024 bytes", s)
	}
	return nil
}

// Emit queues an event of data (never waiting for the network).
func (s *Sender) Emit(data events.Data) {
	if s == nil {
		return
	}
	s.d.Emit(context.Background(), events.New(s.source, data))
}

// Pushed sends version.ingested, via push, for each version tag among
// the tags a push wrote to repository with result res (not latest and
// other pointers): nothing when every tag already held the content
// (res.UpToDate), nor for a push into an OCI layout (oci-layout:PATH),
// which is no registry. address is the versions' address.
func (s *Sender) Pushed(kind events.Kind, address, repository string, tags []string, res oci.PushResult) {
	if res.UpToDate || strings.HasPrefix(repository, oci.LayoutPrefix) {
		return
	}
	for _, t := range tags {
		v, ok := names.VersionFromTag(t)
		if !ok {
			continue
		}
		s.Emit(events.VersionIngested{Kind: kind, Address: address, Version: v.String(), Via: events.ViaPush,
			Repository: repository, Digest: res.Root.Digest.String()})
	}
}

// Mirrored sends version.ingested, via mirror, for each release mirror
// stored: not those it found complete (skipped), denied or failed.
func (s *Sender) Mirrored(results []ingest.Result) {
	for _, r := range results {
		if r.Error != "" || r.Denied != "" || r.Skipped || r.Digest == "" || r.Reference == "" {
			continue
		}
		kind, address := mirroredAddress(r)
		s.Emit(events.VersionIngested{Kind: kind, Address: address, Version: r.Version, Via: events.ViaMirror,
			Repository: repositoryOf(r.Reference), Digest: r.Digest})
	}
}

// mirroredAddress is the kind and address of a mirror result: a module's
// registry address, a provider's source address, or OpenTofu's
// ("tofu", the address the policy matches its releases under).
func mirroredAddress(r ingest.Result) (events.Kind, string) {
	switch {
	case r.Module != "":
		return events.KindModule, r.Module
	case r.Provider == "opentofu":
		return events.KindTofu, "tofu"
	}
	return events.KindProvider, r.Provider
}

// repositoryOf is a host/path:tag reference without its tag.
func repositoryOf(reference string) string {
	ref, err := oci.ParseRegistryReference(reference)
	if err != nil {
		return reference
	}
	return ref.Name()
}

// Pruned sends version.pruned for each version prune --apply deleted
// whole (as its report says "deleted"): not those it kept, failed on or
// stopped before.
func (s *Sender) Pruned(plans []*prune.Plan) {
	for _, p := range plans {
		address := p.Repository.Name
		if len(p.Repository.Addresses) > 0 {
			address = p.Repository.Addresses[0] // its own; the others are other hosts'
		}
		for _, e := range p.Versions {
			if !e.Goes() || e.Err != nil || len(e.Deleted) == 0 || len(e.Deleted) != len(e.Deletes) {
				continue
			}
			s.Emit(events.VersionPruned{Address: address, Version: e.Version.Version.String(),
				Repository: p.Repository.Name, Digest: e.Root.Digest.String()})
		}
	}
}

// Close waits for the deliveries, at most the timeout and ctx (a signal
// ends the wait), and tells stderr what was not delivered. Its error
// says so too; callers print it, not fail with it.
func (s *Sender) Close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := s.d.Close(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("events: gave up waiting for deliveries after %s", s.timeout)
	}
	if n := s.problems.count(); n > 0 && err == nil {
		err = fmt.Errorf("events: %s", names.Plural(n, "delivery problem"))
	}
	if err != nil {
		fmt.Fprintf(s.problems.w, "warning: %v (the registry was changed all the same)\n", err)
	}
	return err
}

type senderKey struct{}

// NewContext is ctx carrying s, for From.
func NewContext(ctx context.Context, s *Sender) context.Context {
	return context.WithValue(ctx, senderKey{}, s)
}

// From is the Sender ctx carries; nil (sending nothing) without one.
func From(ctx context.Context) *Sender {
	s, _ := ctx.Value(senderKey{}).(*Sender)
	return s
}
