package events

import (
	"encoding/json"
	"fmt"
)

// The event types, one per happening; each has its data type below.
const (
	TypeVersionIngested       = "io.oci-tofu.version.ingested.v1"
	TypeVersionPruned         = "io.oci-tofu.version.pruned.v1"
	TypePolicyDenied          = "io.oci-tofu.policy.denied.v1"
	TypePolicyWarned          = "io.oci-tofu.policy.warned.v1"
	TypePolicyDeprecated      = "io.oci-tofu.policy.deprecated.v1"
	TypePolicyRevoked         = "io.oci-tofu.policy.revoked.v1"
	TypeVulnerabilityDetected = "io.oci-tofu.vulnerability.detected.v1"
	TypeOriginKeysChanged     = "io.oci-tofu.origin.keys-changed.v1"
	TypeAuditLost             = "io.oci-tofu.audit.lost.v1"
)

// schemaV1 is the schema version of every type's data so far, but
// origin.keys-changed's (schemaV1_1: it added the omitted counts).
const (
	schemaV1   = "1.0"
	schemaV1_1 = "1.1"
)

// Kind is what a version is of.
type Kind string

// The kinds of version.
const (
	KindProvider Kind = "provider"
	KindModule   Kind = "module"
	KindTofu     Kind = "tofu" // an OpenTofu release
)

// Via is how a version came into the registry.
type Via string

// How versions come in.
const (
	ViaPush        Via = "push"         // oci-tofu push, or the API's push
	ViaMirror      Via = "mirror"       // oci-tofu mirror
	ViaPullThrough Via = "pull-through" // the proxy fetched it from its origin
)

// subject is "<address>@<version>", or the address alone without a
// version.
func subject(address, version string) string {
	if version == "" {
		return address
	}
	return address + "@" + version
}

// VersionIngested is a version newly stored in the registry (type
// io.oci-tofu.version.ingested.v1).
type VersionIngested struct {
	Kind Kind `json:"kind"`
	// Address is the provider's source address
	// (registry.example.com/acme/aws), the module's registry address
	// (registry.example.com/acme/vpc/aws), or the OpenTofu release's
	// (the proxy's tofu address).
	Address string `json:"address"`
	Version string `json:"version"`
	Via     Via    `json:"via"`
	// Repository is the OCI repository (host/path) it is stored in, and
	// Digest its manifest's digest there.
	Repository string `json:"repository"`
	Digest     string `json:"digest"`
}

// VersionPruned is a version removed from the registry by oci-tofu
// prune (type io.oci-tofu.version.pruned.v1).
type VersionPruned struct {
	Address    string `json:"address"`
	Version    string `json:"version"`
	Repository string `json:"repository"`
	Digest     string `json:"digest"`
}

// Client is who a request came from, as the audit trail names it
// (docs/audit.md): never a token.
type Client struct {
	// Name is a policy file client's name, a registry user, "operator"
	// or "anonymous".
	Name string `json:"name"`
	// Identity is how it was identified (audit's identity values:
	// client, oidc, registry, operator...).
	Identity string `json:"identity,omitempty"`
	// Subject is its OIDC subject, when a CI token identified it.
	Subject string `json:"subject,omitempty"`
}

// PolicyDecision is a request the policy denied (Denied) or let through
// with a warning: types io.oci-tofu.policy.denied.v1 and
// io.oci-tofu.policy.warned.v1.
type PolicyDecision struct {
	// Denied makes the event policy.denied, else policy.warned; it is
	// the type, not a data field.
	Denied  bool   `json:"-"`
	Address string `json:"address"`
	Version string `json:"version"`
	// Rule names the policy rule that decided, Reason its message.
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	// Client is who asked, when the request named anyone.
	Client *Client `json:"client,omitempty"`
}

func (d PolicyDecision) decision() string {
	if d.Denied {
		return TypePolicyDenied
	}
	return TypePolicyWarned
}

// PolicyStanding is a version a policy rule deprecates or revokes, as a
// (re)loaded policy puts it in force: types
// io.oci-tofu.policy.deprecated.v1 and io.oci-tofu.policy.revoked.v1.
type PolicyStanding struct {
	// Revoked makes the event policy.revoked, else policy.deprecated; it
	// is the type, not a data field.
	Revoked bool   `json:"-"`
	Address string `json:"address"`
	Version string `json:"version"`
	Rule    string `json:"rule"`
	Reason  string `json:"reason"`
}

func (d PolicyStanding) standing() string {
	if d.Revoked {
		return TypePolicyRevoked
	}
	return TypePolicyDeprecated
}

// VulnerabilityDetected is a version found to have known
// vulnerabilities (type io.oci-tofu.vulnerability.detected.v1).
type VulnerabilityDetected struct {
	Address string `json:"address"`
	Version string `json:"version"`
	// IDs are the vulnerabilities' identifiers (GO-2024-1234, CVE-...).
	IDs []string `json:"ids"`
}

// OriginKeysChanged is a provider whose origin registry now signs with
// other keys than it did (type io.oci-tofu.origin.keys-changed.v1); the
// subject is the address alone.
type OriginKeysChanged struct {
	Address string `json:"address"`
	// OldKeyIDs and NewKeyIDs are the GPG key IDs before and after, at
	// most 100 of each (sorted; the verifying key always among the new
	// ones); OldKeyIDsOmitted and NewKeyIDsOmitted count the others
	// (schema 1.1: an origin may list thousands).
	OldKeyIDs        []string `json:"old_key_ids"`
	NewKeyIDs        []string `json:"new_key_ids"`
	OldKeyIDsOmitted int      `json:"old_key_ids_omitted,omitempty"`
	NewKeyIDsOmitted int      `json:"new_key_ids_omitted,omitempty"`
}

// AuditLost is audit events the proxy could not write (type
// io.oci-tofu.audit.lost.v1); it has no subject.
type AuditLost struct {
	// Count is how many were lost since the last such event.
	Count int64 `json:"count"`
}

// EventType, EventSchemaVersion and EventSubject make each type Data.

func (VersionIngested) EventType() string          { return TypeVersionIngested }
func (VersionIngested) EventSchemaVersion() string { return schemaV1 }
func (d VersionIngested) EventSubject() string     { return subject(d.Address, d.Version) }

func (VersionPruned) EventType() string          { return TypeVersionPruned }
func (VersionPruned) EventSchemaVersion() string { return schemaV1 }
func (d VersionPruned) EventSubject() string     { return subject(d.Address, d.Version) }

func (d PolicyDecision) EventType() string        { return d.decision() }
func (PolicyDecision) EventSchemaVersion() string { return schemaV1 }
func (d PolicyDecision) EventSubject() string     { return subject(d.Address, d.Version) }

func (d PolicyStanding) EventType() string        { return d.standing() }
func (PolicyStanding) EventSchemaVersion() string { return schemaV1 }
func (d PolicyStanding) EventSubject() string     { return subject(d.Address, d.Version) }

func (VulnerabilityDetected) EventType() string          { return TypeVulnerabilityDetected }
func (VulnerabilityDetected) EventSchemaVersion() string { return schemaV1 }
func (d VulnerabilityDetected) EventSubject() string     { return subject(d.Address, d.Version) }

func (OriginKeysChanged) EventType() string          { return TypeOriginKeysChanged }
func (OriginKeysChanged) EventSchemaVersion() string { return schemaV1_1 }
func (d OriginKeysChanged) EventSubject() string     { return d.Address }

func (AuditLost) EventType() string          { return TypeAuditLost }
func (AuditLost) EventSchemaVersion() string { return schemaV1 }
func (AuditLost) EventSubject() string       { return "" }

// decodeData is the data of an event of type t.
func decodeData(t string, raw json.RawMessage) (Data, error) {
	switch t {
	case TypeVersionIngested:
		return decode(t, raw, func(*VersionIngested) {})
	case TypeVersionPruned:
		return decode(t, raw, func(*VersionPruned) {})
	case TypePolicyDenied, TypePolicyWarned:
		return decode(t, raw, func(p *PolicyDecision) { p.Denied = t == TypePolicyDenied })
	case TypePolicyDeprecated, TypePolicyRevoked:
		return decode(t, raw, func(p *PolicyStanding) { p.Revoked = t == TypePolicyRevoked })
	case TypeVulnerabilityDetected:
		return decode(t, raw, func(*VulnerabilityDetected) {})
	case TypeOriginKeysChanged:
		return decode(t, raw, func(*OriginKeysChanged) {})
	case TypeAuditLost:
		return decode(t, raw, func(*AuditLost) {})
	}
	return nil, fmt.Errorf("unknown event type %q", t)
}

// decode is raw, the data of an event of type t, as a T, then set by
// fix.
func decode[T Data](t string, raw json.RawMessage, fix func(*T)) (Data, error) {
	var v T
	if len(raw) == 0 || string(raw) == "null" {
		return nil, fmt.Errorf("%s without data", t)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%s data: %w", t, err)
	}
	fix(&v)
	return v, nil
}
