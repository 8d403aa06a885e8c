// Package audit is the proxy's record of what was served to whom: one
// JSON line per artifact delivered and per request the policy or access
// control refused (docs/audit.md), written by Log and read back by Scan
// for `oci-tofu usage` and `oci-tofu prune`.
package audit

import "time"

// SchemaVersion is the v of every event this package writes. A reader
// takes events of this version; it adds fields without changing the
// version, and changes it when a field changes meaning.
const SchemaVersion = 1

// What an event records.
const (
	// EventDownload is an artifact's file: a provider package (zip), a
	// module package, a file of an OpenTofu release.
	EventDownload = "download"
	// EventDocument is a metadata document (serve --audit-documents);
	// refused document requests are recorded whatever the flag says.
	EventDocument = "document"
)

// How a request ended.
const (
	OutcomeDelivered  = "delivered"  // sent whole (a HEAD of a download is no event)
	OutcomeRedirected = "redirected" // handed the registry's storage URL
	OutcomeAborted    = "aborted"    // cut mid-stream (client gone, digest mismatch, stall)
	OutcomeFailed     = "failed"     // not served: absent, or the registry failing
	OutcomeDenied     = "denied"     // the policy denied the version
	OutcomeRefused    = "refused"    // outside the client's scope
	OutcomeLimited    = "limited"    // the client's rate budget was spent (429)
	OutcomeNoAuth     = "unauthenticated"
)

// How the client was identified.
const (
	IdentityNone               = "none"                // client authentication is off
	IdentityOperator           = "operator"            // a token of --auth-token-file
	IdentityClient             = "client"              // a policy file client's token
	IdentityOIDC               = "oidc"                // a policy file client's CI identity (Subject)
	IdentityRegistry           = "registry"            // a registry credential the registry accepted (--registry-decides)
	IdentityRegistryUnverified = "registry-unverified" // one it has not accepted (yet): the user name is the token's claim
	IdentitySignedURL          = "signed-url"          // an archive URL a document handed Client
	IdentityUnknown            = "unknown"             // a token that names no one
)

// Caller is who a request came from, as the audit trail names it: the
// proxy's one type for "who is calling". The request's audit event
// carries it (protocol/proxy/respond) and hands it to the event
// (Event.From).
type Caller struct {
	// Client is a policy file client's name, a registry user,
	// "operator" (an --auth-token-file token, its fingerprint in
	// Token), the client a signed URL's ticket names ("unknown"
	// without one), or "anonymous".
	Client string
	// Identity is how the caller was identified (the Identity
	// constants); Subject, found by a JWT, its OIDC subject.
	Identity, Subject, Token string
}

// Anonymous is the caller of a request that named none.
var Anonymous = Caller{Client: "anonymous", Identity: IdentityNone}

// From names c as the event's caller.
func (e *Event) From(c Caller) {
	e.Client, e.Identity, e.Subject, e.Token = c.Client, c.Identity, c.Subject, c.Token
}

// Event is one line of the audit trail. Strings are written as JSON
// strings, so what a client sent (user agent, path) cannot forge lines.
type Event struct {
	V       int       `json:"v"`
	Time    time.Time `json:"time"`
	Event   string    `json:"event"`
	Outcome string    `json:"outcome"`
	// Client, Identity, Subject and Token are who asked (Caller).
	Client    string `json:"client"`
	Identity  string `json:"identity"`
	Subject   string `json:"subject,omitempty"` // the OIDC subject
	Token     string `json:"token,omitempty"`   // an operator token's fingerprint
	Remote    string `json:"remote"`
	UserAgent string `json:"user_agent,omitempty"`
	// Path is the request's path (without query) when the request was
	// refused before an address was read from it.
	Path string `json:"path,omitempty"`

	Kind     string `json:"kind,omitempty"`
	Address  string `json:"address,omitempty"`
	Version  string `json:"version,omitempty"`
	Platform string `json:"platform,omitempty"`
	File     string `json:"file,omitempty"`
	Digest   string `json:"digest,omitempty"`
	// Repository is the OCI repository the artifact is stored in
	// (host/path), Source whether it was held there or pulled through.
	Repository string `json:"repository,omitempty"`
	Source     string `json:"source,omitempty"`

	Status int   `json:"status"`
	Bytes  int64 `json:"bytes"`
	// Rule and Reason are the policy's decision, or why access was
	// refused.
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Where an artifact came from.
const (
	SourceHeld   = "held"
	SourcePulled = "pulled"
)

// Delivered reports whether the event is an artifact a client received
// (or was handed the storage URL of).
func (e *Event) Delivered() bool {
	return e.Event == EventDownload && (e.Outcome == OutcomeDelivered || e.Outcome == OutcomeRedirected)
}

// A Sink takes the events a proxy makes: the audit file (Log), the
// fleet's download counts, the page's figures.
type Sink interface {
	Record(*Event)
}

// Sinks hands each event to every one of its sinks, in order.
type Sinks []Sink

func (s Sinks) Record(ev *Event) {
	for _, k := range s {
		k.Record(ev)
	}
}
