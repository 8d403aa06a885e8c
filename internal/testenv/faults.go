package testenv

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Fault is what a Front does to one request instead of, or besides,
// forwarding it. The zero Fault forwards the request untouched.
type Fault struct {
	// Status, when set, answers the request with this status, Header and
	// Body instead of forwarding it.
	Status int
	Header http.Header
	Body   []byte
	// Hang waits this long before going on; HangUntilClientLeaves waits
	// until the client gives up (and answers nothing).
	Hang time.Duration
	// Truncate cuts the forwarded response body after TruncateAfter bytes
	// and drops the connection (Content-Length still promises the rest).
	Truncate      bool
	TruncateAfter int64
	// Garbage replaces the forwarded body with random bytes of its length.
	Garbage bool
	// FlipByte inverts one byte in the middle of the forwarded body, so
	// its digest no longer matches.
	FlipByte bool
	// PagingLoop makes a paged tag list's Link header point back at the
	// page that carries it (on a Front with TagPageSize).
	PagingLoop bool
}

// HangUntilClientLeaves is a Fault.Hang that never answers.
const HangUntilClientLeaves time.Duration = -1

// FaultRule scripts a Fault: it applies to requests that Match (all when
// nil), counted in order of arrival, either to all of them, to the First
// ones, or to every Every-th one; with PerPath each path is counted on its
// own.
type FaultRule struct {
	Match   func(*http.Request) bool
	First   int
	Every   int
	PerPath bool
	Fault   Fault
}

// TooManyRequests is a 429 answer with Retry-After (in whole seconds, at
// least one) and a Distribution-style TOOMANYREQUESTS error.
func TooManyRequests(retryAfter time.Duration) Fault {
	secs := max(int(retryAfter.Round(time.Second)/time.Second), 1)
	f := ErrorAnswer(http.StatusTooManyRequests, "TOOMANYREQUESTS", "too many requests: slow down")
	f.Header.Set("Retry-After", fmt.Sprint(secs))
	return f
}

// ErrorAnswer is an answer with a Distribution-style error document
// {"errors":[{"code":…,"message":…}]}.
func ErrorAnswer(status int, code, message string) Fault {
	body, _ := json.Marshal(map[string]any{"errors": []map[string]any{{"code": code, "message": message, "detail": nil}}})
	return Fault{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
}

// MatchBlobGET matches blob downloads (not uploads).
func MatchBlobGET(r *http.Request) bool {
	_, rest := splitRepoPath(r.URL.Path)
	return r.Method == http.MethodGet && strings.HasPrefix(rest, "blobs/") && !strings.HasPrefix(rest, "blobs/uploads/")
}

// MatchManifests matches manifest requests (GET, HEAD, PUT).
func MatchManifests(r *http.Request) bool {
	_, rest := splitRepoPath(r.URL.Path)
	return strings.HasPrefix(rest, "manifests/")
}

// MatchTagList matches tag list requests.
func MatchTagList(r *http.Request) bool {
	_, rest := splitRepoPath(r.URL.Path)
	return rest == "tags/list"
}

// MatchRepository matches the requests about one repository.
func MatchRepository(name string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		repo, _ := splitRepoPath(r.URL.Path)
		return repo == name
	}
}

// faultScript counts requests against a list of rules.
type faultScript struct {
	mu     sync.Mutex
	rules  []FaultRule
	counts []int
	paths  []map[string]int
}

func newFaultScript(rules []FaultRule) *faultScript {
	s := &faultScript{rules: rules, counts: make([]int, len(rules)), paths: make([]map[string]int, len(rules))}
	for i := range s.paths {
		s.paths[i] = map[string]int{}
	}
	return s
}

// next counts r against the rules in order and returns the Fault of the
// first rule that applies, or nil.
func (s *faultScript) next(r *http.Request) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, rule := range s.rules {
		if rule.Match != nil && !rule.Match(r) {
			continue
		}
		var n int
		if rule.PerPath {
			s.paths[i][r.URL.Path]++
			n = s.paths[i][r.URL.Path]
		} else {
			s.counts[i]++
			n = s.counts[i]
		}
		if rule.applies(n) {
			f := rule.Fault
			return &f
		}
	}
	return nil
}

// applies reports whether the rule applies to the n-th matching request.
func (rule FaultRule) applies(n int) bool {
	switch {
	case rule.First == 0 && rule.Every == 0:
		return true
	case rule.First > 0 && n <= rule.First:
		return true
	case rule.Every > 0 && n%rule.Every == 0:
		return true
	}
	return false
}

// faultyBody applies a Fault's body changes to a forwarded response body.
type faultyBody struct {
	io.ReadCloser
	fault  Fault
	read   int64
	flipAt int64
}

// wrapBody returns body changed as fault says, or body itself.
func wrapBody(body io.ReadCloser, fault *Fault, length int64) io.ReadCloser {
	if fault == nil || !(fault.Truncate || fault.Garbage || fault.FlipByte) {
		return body
	}
	return &faultyBody{ReadCloser: body, fault: *fault, flipAt: max(length/2, 0)}
}

func (b *faultyBody) Read(p []byte) (int, error) {
	if b.fault.Truncate {
		left := b.fault.TruncateAfter - b.read
		if left <= 0 {
			return 0, io.ErrUnexpectedEOF
		}
		p = p[:min(int64(len(p)), left)]
	}
	n, err := b.ReadCloser.Read(p)
	if b.fault.Garbage {
		rand.Read(p[:n])
	}
	if b.fault.FlipByte && b.flipAt >= b.read && b.flipAt < b.read+int64(n) {
		p[b.flipAt-b.read] ^= 0xff
	}
	b.read += int64(n)
	return n, err
}
