// Package events is the proxy's outbound events: what happened (a version
// ingested, a policy decision, a vulnerability found...) as a value, a
// CloudEvents 1.0 event in its structured JSON form (docs/events.md), and
// the Emitter the proxy hands them to. Delivery to HTTP endpoints is
// protocol/events/webhook.
package events

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SpecVersion is the CloudEvents version the events are written in.
const SpecVersion = "1.0"

// ContentType is the datacontenttype of every event: its data is JSON.
const ContentType = "application/json"

// Event is one happening, ready to send: the CloudEvents context
// attributes and the data, one of this package's data types.
type Event struct {
	// ID is unique per event (128 random bits, hex): receivers
	// de-duplicate by it, and webhook deliveries send it as webhook-id.
	ID string
	// Source is the proxy's public URL, as the caller configures it.
	Source string
	// Type is the data's EventType (io.oci-tofu.<what>.<happened>.v1).
	Type string
	// Subject names what the event is about: "<address>@<version>" for a
	// version, "<address>" for an address, "" when it is about neither
	// (audit.lost). See Data.EventSubject.
	Subject string
	// Time is when it happened.
	Time time.Time
	// SchemaVersion is the version of the data's schema, sent as the
	// schemaversion extension attribute: "1.<minor>" for the .v1 types;
	// a minor version adds fields, a change of meaning is a new type.
	SchemaVersion string
	// Data is what happened, one of this package's data types.
	Data Data
}

// Data is the data of an event: each type names its event type, schema
// version and subject.
type Data interface {
	EventType() string
	EventSchemaVersion() string
	EventSubject() string
}

// New is the event of data, from source (the proxy's public URL), now,
// with a fresh ID.
func New(source string, data Data) Event {
	return Event{
		ID:            NewID(),
		Source:        source,
		Type:          data.EventType(),
		Subject:       data.EventSubject(),
		Time:          time.Now().UTC(),
		SchemaVersion: data.EventSchemaVersion(),
		Data:          data,
	}
}

// NewID is a fresh event ID: 128 random bits in hex.
func NewID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// StableID is an event ID made of parts (the type, subject and what
// else makes the happening one): the same on every replica of a fleet
// that sees the happening, so that a shared webhook.Claimer delivers it
// once. 128 bits of SHA-256, hex.
func StableID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Address is the address part of the event's subject ("" when it names
// none): what webhook subscriptions' address filters match.
func (e Event) Address() string {
	if i := strings.LastIndexByte(e.Subject, '@'); i >= 0 {
		return e.Subject[:i]
	}
	return e.Subject
}

// wire is an event as CloudEvents' JSON format writes it.
type wire struct {
	SpecVersion     string `json:"specversion"`
	ID              string `json:"id"`
	Source          string `json:"source"`
	Type            string `json:"type"`
	Subject         string `json:"subject,omitempty"`
	Time            string `json:"time"`
	DataContentType string `json:"datacontenttype"`
	SchemaVersion   string `json:"schemaversion"`
	Data            any    `json:"data"`
}

// MarshalJSON writes the event in CloudEvents' structured JSON format,
// its schema version in the schemaversion extension attribute. An event
// without an ID, a source, a type or data is an error.
func (e Event) MarshalJSON() ([]byte, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(wire{
		SpecVersion:     SpecVersion,
		ID:              e.ID,
		Source:          e.Source,
		Type:            e.Type,
		Subject:         e.Subject,
		Time:            e.Time.UTC().Format(time.RFC3339Nano),
		DataContentType: ContentType,
		SchemaVersion:   e.SchemaVersion,
		Data:            e.Data,
	})
	if err != nil {
		return nil, fmt.Errorf("event %s: %w", e.Type, err)
	}
	return b, nil
}

func (e Event) check() error {
	switch {
	case e.ID == "":
		return errors.New("event without an id")
	case e.Source == "":
		return fmt.Errorf("event %s without a source", e.ID)
	case e.Type == "":
		return fmt.Errorf("event %s without a type", e.ID)
	case e.Data == nil:
		return fmt.Errorf("event %s (%s) without data", e.ID, e.Type)
	case e.Time.IsZero():
		return fmt.Errorf("event %s (%s) without a time", e.ID, e.Type)
	}
	return nil
}

// MaxEventSize bounds the JSON Parse reads.
const MaxEventSize = 1 << 20

// Parse reads an event in CloudEvents' structured JSON format, of one of
// this package's types, its data decoded into that type's struct
// (unknown data fields are ignored: a later minor schema version may add
// some). It is what a Go receiver of the proxy's webhooks may use.
func Parse(b []byte) (Event, error) {
	if len(b) > MaxEventSize {
		return Event{}, fmt.Errorf("event of %d bytes, more than %d", len(b), MaxEventSize)
	}
	var w struct {
		wire
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return Event{}, fmt.Errorf("event: %w", err)
	}
	if w.SpecVersion != SpecVersion {
		return Event{}, fmt.Errorf("event: specversion %q, not %q", w.SpecVersion, SpecVersion)
	}
	t, err := time.Parse(time.RFC3339Nano, w.Time)
	if err != nil {
		return Event{}, fmt.Errorf("event %s: time: %w", w.ID, err)
	}
	data, err := decodeData(w.Type, w.Data)
	if err != nil {
		return Event{}, fmt.Errorf("event %s: %w", w.ID, err)
	}
	e := Event{ID: w.ID, Source: w.Source, Type: w.Type, Subject: w.Subject, Time: t, SchemaVersion: w.SchemaVersion, Data: data}
	return e, e.check()
}

// Emitter takes events. Emit must not block on delivery (the request or
// reload that emits waits for nothing): an Emitter queues, and drops
// what it cannot queue.
type Emitter interface {
	Emit(ctx context.Context, e Event)
}

// Discard is the Emitter that drops every event: the proxy's when no
// events are configured.
var Discard Emitter = discard{}

type discard struct{}

func (discard) Emit(context.Context, Event) {}

// FanOut is an Emitter handing each event to every one of emitters, in
// order (nil ones left out).
func FanOut(emitters ...Emitter) Emitter {
	var f fanOut
	for _, e := range emitters {
		if e != nil {
			f = append(f, e)
		}
	}
	return f
}

type fanOut []Emitter

func (f fanOut) Emit(ctx context.Context, e Event) {
	for _, em := range f {
		em.Emit(ctx, e)
	}
}
