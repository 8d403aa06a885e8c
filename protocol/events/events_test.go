package events

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
)

const source = "https://proxy.example.com"

// every is one event of each type.
func every() []Data {
	return []Data{
		VersionIngested{Kind: KindProvider, Address: "registry.example.com/acme/aws", Version: "1.2.3", Via: ViaPullThrough,
			Repository: "oci.example.com/providers/acme/aws", Digest: "sha256:" + strings.Repeat("a", 64)},
		VersionPruned{Address: "registry.example.com/acme/vpc/aws", Version: "0.1.0", Repository: "oci.example.com/modules/acme/vpc/aws", Digest: "sha256:" + strings.Repeat("b", 64)},
		PolicyDecision{Denied: true, Address: "registry.example.com/acme/aws", Version: "1.0.0", Rule: "deny-old", Reason: "too old",
			Client: &Client{Name: "ci", Identity: "oidc", Subject: "repo:acme/infra:ref:refs/heads/main"}},
		PolicyDecision{Address: "registry.example.com/acme/aws", Version: "1.1.0", Rule: "warn-beta", Reason: "a beta"},
		PolicyStanding{Address: "registry.example.com/acme/aws", Version: "1.1.0", Rule: "deprecate-1.1", Reason: "use 1.2"},
		PolicyStanding{Revoked: true, Address: "registry.example.com/acme/aws", Version: "1.0.1", Rule: "revoke-1.0.1", Reason: "leaks"},
		VulnerabilityDetected{Address: "registry.example.com/acme/aws", Version: "1.2.3", IDs: []string{"GO-2024-0001", "CVE-2024-1"}},
		OriginKeysChanged{Address: "registry.example.com/acme/aws", OldKeyIDs: []string{"AAAA"}, NewKeyIDs: []string{"BBBB"}},
		AuditLost{Count: 7},
	}
}

// TestEventsAreCloudEvents: each type's JSON is a valid CloudEvents 1.0
// event as the CloudEvents SDK reads it, with the attributes set, and
// reads back (Parse) to the same event.
func TestEventsAreCloudEvents(t *testing.T) {
	types := map[string]bool{}
	for _, d := range every() {
		e := New(source, d)
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("%T: %v", d, err)
		}
		var ce cloudevents.Event
		if err := ce.UnmarshalJSON(b); err != nil {
			t.Fatalf("%s: the SDK does not read %s: %v", e.Type, b, err)
		}
		if err := ce.Validate(); err != nil {
			t.Fatalf("%s: not a valid CloudEvent: %v", e.Type, err)
		}
		if ce.SpecVersion() != "1.0" || ce.ID() != e.ID || ce.Source() != source || ce.Type() != d.EventType() ||
			ce.Subject() != d.EventSubject() || ce.DataContentType() != "application/json" || !ce.Time().Equal(e.Time) {
			t.Errorf("%s: the SDK reads %+v", e.Type, ce)
		}
		want := "1.0"
		if e.Type == TypeOriginKeysChanged {
			want = "1.1" // the omitted counts
		}
		if got := ce.Extensions()["schemaversion"]; got != want {
			t.Errorf("%s: schemaversion %v", e.Type, got)
		}
		var sdkData map[string]any
		if err := ce.DataAs(&sdkData); err != nil || len(sdkData) == 0 {
			t.Errorf("%s: data %v, %v", e.Type, sdkData, err)
		}
		back, err := Parse(b)
		if err != nil {
			t.Fatalf("%s: Parse: %v", e.Type, err)
		}
		if !reflect.DeepEqual(back, e) {
			t.Errorf("%s: read back\n%+v\nnot\n%+v", e.Type, back, e)
		}
		types[e.Type] = true
	}
	if len(types) != 9 {
		t.Errorf("%d types, not 9: %v", len(types), types)
	}
}

// TestSubjectAndAddress: the subject is address@version, the address
// alone, or absent; Address reads the address back.
func TestSubjectAndAddress(t *testing.T) {
	for _, c := range []struct {
		d                Data
		subject, address string
	}{
		{VersionIngested{Address: "registry.example.com/acme/aws", Version: "1.2.3"}, "registry.example.com/acme/aws@1.2.3", "registry.example.com/acme/aws"},
		{OriginKeysChanged{Address: "registry.example.com/acme/aws"}, "registry.example.com/acme/aws", "registry.example.com/acme/aws"},
		{AuditLost{Count: 1}, "", ""},
	} {
		e := New(source, c.d)
		if e.Subject != c.subject || e.Address() != c.address {
			t.Errorf("%s: subject %q address %q, want %q %q", e.Type, e.Subject, e.Address(), c.subject, c.address)
		}
	}
	b, _ := json.Marshal(New(source, AuditLost{Count: 1}))
	if strings.Contains(string(b), `"subject"`) {
		t.Errorf("audit.lost has a subject: %s", b)
	}
}

// TestIDsAreUnique: 10,000 events, 10,000 ids of 128 bits.
func TestIDsAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 10000 {
		id := NewID()
		if len(id) != 32 || seen[id] {
			t.Fatalf("id %q (seen: %v)", id, seen[id])
		}
		seen[id] = true
	}
}

// TestIncompleteEventsAreErrors: an event missing a required attribute
// is not written; Parse refuses what is not one of ours.
func TestIncompleteEventsAreErrors(t *testing.T) {
	good := New(source, AuditLost{Count: 1})
	for name, e := range map[string]Event{
		"no id":     func() Event { e := good; e.ID = ""; return e }(),
		"no source": func() Event { e := good; e.Source = ""; return e }(),
		"no type":   func() Event { e := good; e.Type = ""; return e }(),
		"no data":   func() Event { e := good; e.Data = nil; return e }(),
		"no time":   func() Event { e := good; e.Time = time.Time{}; return e }(),
	} {
		if b, err := json.Marshal(e); err == nil {
			t.Errorf("%s: written: %s", name, b)
		}
	}
	for name, b := range map[string]string{
		"not JSON":     "{",
		"spec 0.3":     `{"specversion":"0.3","id":"1","source":"s","type":"io.oci-tofu.audit.lost.v1","time":"2026-01-01T00:00:00Z","data":{"count":1}}`,
		"unknown type": `{"specversion":"1.0","id":"1","source":"s","type":"com.example.x","time":"2026-01-01T00:00:00Z","data":{}}`,
		"no data":      `{"specversion":"1.0","id":"1","source":"s","type":"io.oci-tofu.audit.lost.v1","time":"2026-01-01T00:00:00Z"}`,
		"bad data":     `{"specversion":"1.0","id":"1","source":"s","type":"io.oci-tofu.audit.lost.v1","time":"2026-01-01T00:00:00Z","data":{"count":"x"}}`,
		"bad time":     `{"specversion":"1.0","id":"1","source":"s","type":"io.oci-tofu.audit.lost.v1","time":"yesterday","data":{"count":1}}`,
		"no id":        `{"specversion":"1.0","source":"s","type":"io.oci-tofu.audit.lost.v1","time":"2026-01-01T00:00:00Z","data":{"count":1}}`,
	} {
		if e, err := Parse([]byte(b)); err == nil {
			t.Errorf("%s: parsed: %+v", name, e)
		}
	}
}

type recorder struct{ got []string }

func (r *recorder) Emit(_ context.Context, e Event) { r.got = append(r.got, e.ID) }

// TestFanOut hands each event to every emitter, nil ones left out.
func TestFanOut(t *testing.T) {
	a, b := &recorder{}, &recorder{}
	f := FanOut(a, nil, Discard, b)
	e := New(source, AuditLost{Count: 1})
	f.Emit(context.Background(), e)
	if len(a.got) != 1 || len(b.got) != 1 || a.got[0] != e.ID || b.got[0] != e.ID {
		t.Errorf("a %v b %v", a.got, b.got)
	}
}

// TestStableID: the same parts, the same id; other parts (or the same
// text split otherwise), another.
func TestStableID(t *testing.T) {
	a := StableID(TypePolicyRevoked, "registry.example.com/acme/aws@1.0.1", "revoke-1.0.1")
	if a != StableID(TypePolicyRevoked, "registry.example.com/acme/aws@1.0.1", "revoke-1.0.1") || len(a) != 32 {
		t.Errorf("not stable: %s", a)
	}
	if a == StableID(TypePolicyDeprecated, "registry.example.com/acme/aws@1.0.1", "revoke-1.0.1") || StableID("ab", "c") == StableID("a", "bc") {
		t.Error("different parts, the same id")
	}
}
