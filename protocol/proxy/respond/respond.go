// Package respond is what every protocol handler of the proxy answers
// with: the request prologue (GET or HEAD, the cached document asked
// first, handed-out URLs' signatures, the path parsed), errors mapped to
// statuses in one switch, the document cache, the URLs documents hand
// out, verified blob delivery (streamed, pipelined over HTTP/2, or
// redirected to storage), instrumentation (a request's counters and log
// line, and its audit event, carried in its context: audit.go), and the
// Observer told what was served. It knows sources only through their model values and
// typed errors (protocol/source); it never composes them.
package respond

import (
	"sync/atomic"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Options are the settings of the server the responder answers for.
type Options struct {
	// RegistryHostname is the ${hostname} of the registry protocols;
	// empty: the request's host.
	RegistryHostname string
	// PublicURL is the base of the URLs handed out (empty: the
	// request's, or relative URLs).
	PublicURL string
	// TagTTL is how long a document is fresh from when its data was
	// read; MaxStale how long after that it is served while being
	// rebuilt; FailureTTL how long a failure is remembered (its
	// Retry-After).
	TagTTL, MaxStale, FailureTTL time.Duration
	// ArchiveURLTTL is how long signed URLs are valid.
	ArchiveURLTTL time.Duration
	// StallTimeout aborts a blob stream that makes no progress.
	StallTimeout time.Duration
	// RedirectArchives hands out the storage URL a registry redirects a
	// blob's download to.
	RedirectArchives bool
	// Hint says what the operator can do about an upstream failure
	// (logged, never sent).
	Hint func(error) string
	// Policy is the policy file in force (its generation keys
	// documents); Now the clock of time-bound decisions.
	Policy *policy.Live
	// VulnDB is the vulnerability database the policy's vulnerabilities
	// blocks match SBOMs against (serve --vuln-db; nil: none): its
	// generation keys documents too.
	VulnDB *vulns.Live
	Now    func() time.Time
	// Notified, when set, counts the batches of registry notifications
	// the proxy acted on (protocol/notify): like the policy's
	// generation, it keys the document cache, so a document built
	// before a notified push is not served after it.
	Notified *atomic.Uint64
}

// Observer is told what was served: the page keeps its record of it
// (a provider's via is names.Via's String).
// Handlers tell it what their documents listed; the responder tells it
// the upstream failures it answered and the policy's denials.
type Observer interface {
	ProviderListed(address, via string, versions names.VersionList)
	ProviderVersion(address, via string, v names.Version, platforms []names.Platform, signed bool)
	ModuleListed(address string, versions []string)
	TofuListed(versions []string)
	UpstreamFailure(class, what string)
	PolicyDenied(kind names.Kind, address string, v names.Version, d policy.Decision, fromFacts bool)
	// Deprecations are, of the versions a listing of address (of a
	// policy kind) served, those the policy deprecates, with the
	// message: the others are no longer deprecated.
	Deprecations(kind names.Kind, address string, listed names.VersionList, deprecated map[string]string)
	// Vulnerabilities records which of a provider listing's versions
	// the policy serves with known vulnerabilities (warn), and which.
	Vulnerabilities(address string, listed names.VersionList, vulnerable map[string]string)
}
