package modulesource

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// Source kinds.
const (
	KindGit     = "git"
	KindArchive = "archive"
)

// Source is a module source address as tofu's module installer reads it
// (go-getter forced getters, detectors, `//subdir`, `?ref=`, `?archive=`),
// restricted to what pull-through fetches: git over HTTPS and zip or
// tar.gz archives over HTTPS.
type Source struct {
	Kind string
	// URL is what is fetched: the repository or the archive, without the
	// ref and archive parameters.
	URL *url.URL
	// Ref is the git ref (tag, branch or commit) given with ?ref=.
	Ref string
	// Archive is "zip" or "tar.gz" for an archive.
	Archive string
	// Subdir is the module's directory inside the fetched tree ("" for
	// its root).
	Subdir string
}

// String is the source without any query parameter but ref (which names
// what was fetched): what the attestation records.
func (s Source) String() string {
	out := origin.RedactURL(s.URL)
	if s.Kind == KindGit {
		out = "git::" + out
	}
	if s.Subdir != "" {
		out += "//" + s.Subdir
	}
	if s.Ref != "" {
		out += "?ref=" + url.QueryEscape(s.Ref)
	}
	return out
}

var forcedGetter = regexp.MustCompile(`^([A-Za-z0-9]+)::(.+)$`)

// ParseSource reads a download answer's location (already resolved
// against the download URL when relative).
func ParseSource(loc string) (Source, error) {
	forced, rest := "", loc
	if m := forcedGetter.FindStringSubmatch(loc); m != nil {
		forced, rest = strings.ToLower(m[1]), m[2]
	}
	if forced == "" && strings.HasPrefix(rest, "github.com/") {
		forced, rest = KindGit, githubURL(rest)
	}
	rest, subdir := splitSubdir(rest)
	if err := checkSubdir(subdir); err != nil {
		return Source{}, fmt.Errorf("%w: module source %q: %v", ErrRefused, loc, err)
	}
	u, err := url.Parse(rest)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return Source{}, fmt.Errorf("%w: module source %q: pull-through fetches only https:// sources without credentials in the URL", ErrRefused, redactRaw(loc))
	}
	s := Source{URL: u, Subdir: subdir}
	switch forced {
	case KindGit:
		return s.asGit(loc)
	case "", "http", "https":
		return s.asArchive(loc)
	}
	return Source{}, fmt.Errorf("%w: module source %q: the %s:: getter is not supported by pull-through (git over HTTPS and archives are)", ErrRefused, redactRaw(loc), forced)
}

// githubURL is the git URL go-getter's GitHub detector makes of
// github.com/OWNER/REPO[//subdir][?query].
func githubURL(rest string) string {
	p, q, _ := strings.Cut(rest, "?")
	repo, sub, hasSub := strings.Cut(strings.TrimPrefix(p, "github.com/"), "//")
	parts := strings.SplitN(repo, "/", 3)
	if len(parts) >= 2 && !strings.HasSuffix(parts[1], ".git") {
		parts[1] += ".git"
	}
	out := "https://github.com/" + strings.Join(parts, "/")
	if hasSub {
		out += "//" + sub
	}
	if q != "" {
		out += "?" + q
	}
	return out
}

// splitSubdir splits `//subdir` off a source as go-getter does: after
// the scheme's "://", before the query, which stays on the source.
func splitSubdir(src string) (string, string) {
	stop := len(src)
	if i := strings.Index(src, "?"); i >= 0 {
		stop = i
	}
	offset := 0
	if i := strings.Index(src[:stop], "://"); i >= 0 {
		offset = i + 3
	}
	i := strings.Index(src[offset:stop], "//")
	if i < 0 {
		return src, ""
	}
	i += offset
	sub, query := src[i+2:], ""
	if j := strings.Index(sub, "?"); j >= 0 {
		sub, query = sub[:j], sub[j:]
	}
	return src[:i] + query, sub
}

func checkSubdir(sub string) error {
	if sub == "" {
		return nil
	}
	c := path.Clean(sub)
	if strings.HasPrefix(sub, "/") || c == ".." || strings.HasPrefix(c, "../") || strings.ContainsAny(sub, "*?[\\\x00") {
		return fmt.Errorf("subdirectory %q is not a plain relative path", sub)
	}
	return nil
}

func (s Source) asGit(loc string) (Source, error) {
	q := s.URL.Query()
	for k := range q {
		switch k {
		case "ref", "depth":
		default:
			return Source{}, fmt.Errorf("%w: git source %q: parameter %q is not supported by pull-through", ErrRefused, redactRaw(loc), k)
		}
	}
	s.Kind, s.Ref = KindGit, q.Get("ref")
	if strings.HasPrefix(s.Ref, "-") || strings.ContainsAny(s.Ref, " \x00~^:\\") {
		return Source{}, fmt.Errorf("%w: git source %q: ref %q is not a tag, branch or commit", ErrRefused, redactRaw(loc), s.Ref)
	}
	q.Del("ref")
	q.Del("depth")
	s.URL.RawQuery = q.Encode()
	return s, nil
}

func (s Source) asArchive(loc string) (Source, error) {
	q := s.URL.Query()
	kind := strings.ToLower(q.Get("archive"))
	if kind != "" {
		q.Del("archive")
		s.URL.RawQuery = q.Encode()
	} else {
		p := strings.ToLower(s.URL.Path)
		for _, ext := range []string{".zip", ".tar.gz", ".tgz"} {
			if strings.HasSuffix(p, ext) {
				kind = strings.TrimPrefix(ext, ".")
			}
		}
	}
	switch kind {
	case "zip":
		s.Archive = "zip"
	case "tar.gz", "tgz":
		s.Archive = "tar.gz"
	default:
		return Source{}, fmt.Errorf("%w: module source %q is neither git (git::https://…) nor a .zip, .tar.gz or .tgz archive", ErrRefused, redactRaw(loc))
	}
	s.Kind = KindArchive
	return s, nil
}

// redactRaw is a location for messages: without query (which may carry
// signatures) or credentials.
func redactRaw(loc string) string {
	if i := strings.Index(loc, "?"); i >= 0 {
		loc = loc[:i]
	}
	if u, err := url.Parse(strings.TrimPrefix(loc, "git::")); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	return loc
}
