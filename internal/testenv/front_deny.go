package testenv

// A Front with DenyMissing answers as GHCR does: a missing repository is
// denied (401 or 403), not reported missing.

import (
	"net/http"
	"strings"
)

// shouldDeny reports whether the request reads a missing repository that
// DenyMissing hides, for a client that may not create it.
func (f *Front) shouldDeny(r *http.Request, repo, rest string) bool {
	if f.opts.DenyMissing == 0 || repo == "" || (r.Method != http.MethodGet && r.Method != http.MethodHead) || strings.HasPrefix(rest, "blobs/uploads/") {
		return false
	}
	if tokenGrants(r.Header.Get("Authorization"), repo, "push") {
		return false
	}
	return !f.exists(r, repo)
}

// exists asks the registry, with the client's credentials, whether a
// repository exists (has tags); positive answers are remembered. When the
// registry won't say (401, 403, errors), the repository is taken to exist
// and the request goes through to get the registry's own answer.
func (f *Front) exists(r *http.Request, repo string) bool {
	f.mu.Lock()
	known := f.existing[repo]
	f.mu.Unlock()
	if known {
		return true
	}
	resp, err := f.upstreamGET(r.Context(), "/v2/"+repo+"/tags/list?n=1", r.Host, r.Header.Get("Authorization"))
	if err != nil {
		return true
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		f.mu.Lock()
		f.existing[repo] = true
		f.mu.Unlock()
		return true
	case http.StatusNotFound:
		return false
	}
	return true
}

// deny answers as GHCR does for a repository the client cannot see.
func (f *Front) deny(w http.ResponseWriter, r *http.Request) {
	if f.opts.DenyMissing == http.StatusUnauthorized {
		if c := f.upstreamChallenge(r); c != "" {
			w.Header().Set("WWW-Authenticate", c)
		}
	}
	writeRegistryError(w, f.opts.DenyMissing, "DENIED", "requested access to the resource is denied")
}

// upstreamChallenge is the registry's WWW-Authenticate for anonymous
// clients at /v2/ ("" for an anonymous registry), asked once.
func (f *Front) upstreamChallenge(r *http.Request) string {
	f.mu.Lock()
	c := f.challenge
	f.mu.Unlock()
	if c != nil {
		return *c
	}
	resp, err := f.upstreamGET(r.Context(), "/v2/", r.Host, "")
	if err != nil {
		return ""
	}
	resp.Body.Close()
	challenge := resp.Header.Get("WWW-Authenticate")
	f.mu.Lock()
	f.challenge = &challenge
	f.mu.Unlock()
	return challenge
}
