package testenv

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// maxTagListBytes bounds one upstream tag list document.
const maxTagListBytes = 16 << 20

// maxUpstreamPages bounds how many upstream pages one tag list may take.
const maxUpstreamPages = 1000

// serveTagPage answers a tag list request with one page of the registry's
// tags, sorted, and a Link to the next page whose cursor is opaque (ECR's
// manner: last=<token>, where the token is no tag name).
func (f *Front) serveTagPage(w http.ResponseWriter, r *http.Request, repo string, fault *Fault) {
	q := r.URL.Query()
	after := ""
	cursor := q.Get("last")
	if cursor != "" {
		var ok bool
		if after, ok = f.cursorTag(cursor); !ok {
			writeRegistryError(w, http.StatusBadRequest, "PAGINATION_NUMBER_INVALID", "invalid pagination token: follow the Link header")
			return
		}
	}
	size := f.opts.TagPageSize
	if n, err := strconv.Atoi(q.Get("n")); err == nil && n > 0 && n < size {
		size = n
	}
	tags, resp, err := f.upstreamTags(r, repo)
	if err != nil {
		writeRegistryError(w, http.StatusBadGateway, "UNKNOWN", "front: "+err.Error())
		return
	}
	if resp != nil {
		relay(w, resp)
		return
	}
	start := sort.SearchStrings(tags, after)
	if start < len(tags) && tags[start] == after {
		start++
	}
	end := min(start+size, len(tags))
	page := tags[start:end]
	if end < len(tags) {
		next := f.newCursor(page[len(page)-1])
		if fault != nil && fault.PagingLoop {
			next = f.newCursor(after) // this very page again
		}
		w.Header().Set("Link", fmt.Sprintf(`</v2/%s/tags/list?last=%s&n=%d>; rel="next"`, repo, next, size))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"name": repo, "tags": page})
}

// newCursor mints an opaque cursor for the page after tag.
func (f *Front) newCursor(tag string) string {
	c := randomHex(12)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cursors[c] = tag
	return c
}

// cursorTag returns the tag a cursor continues after.
func (f *Front) cursorTag(cursor string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tag, ok := f.cursors[cursor]
	return tag, ok
}

// upstreamTags reads every tag of repo from the registry, following its
// own Link headers, with the client's credentials. A non-200 answer is
// returned for relaying, body unread.
func (f *Front) upstreamTags(r *http.Request, repo string) ([]string, *http.Response, error) {
	var all []string
	next := "/v2/" + repo + "/tags/list"
	for range maxUpstreamPages {
		resp, err := f.upstreamGET(r.Context(), next, r.Host, r.Header.Get("Authorization"))
		if err != nil {
			return nil, nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, resp, nil
		}
		tags, err := readTagList(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, nil, err
		}
		all = append(all, tags...)
		if next = nextLink(resp.Header.Get("Link")); next == "" {
			if f.opts.ExtraTags != nil {
				all = append(all, f.opts.ExtraTags(repo)...)
			}
			sort.Strings(all)
			return all, nil, nil
		}
	}
	return nil, nil, fmt.Errorf("more than %d pages of tags upstream", maxUpstreamPages)
}

func readTagList(body io.Reader) ([]string, error) {
	var doc struct {
		Tags []string `json:"tags"`
	}
	b, err := io.ReadAll(io.LimitReader(body, maxTagListBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxTagListBytes {
		return nil, fmt.Errorf("tag list over %d bytes", maxTagListBytes)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("tag list: %w", err)
	}
	return doc.Tags, nil
}

// nextLink returns the path and query of a Link header's rel="next"
// target, or "".
func nextLink(link string) string {
	for part := range strings.SplitSeq(link, ",") {
		target, params, ok := strings.Cut(part, ";")
		if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
			continue
		}
		u, err := url.Parse(strings.Trim(strings.TrimSpace(target), "<>"))
		if err != nil {
			return ""
		}
		return u.RequestURI()
	}
	return ""
}

// relay copies an upstream answer to the client.
func relay(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}
