package repotemplate

import (
	"maps"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// The inverse of Expand: which names a repository stands for (Match), and
// the fixed part of a template a listing can filter by (ListPrefix).

// Match is the inverse of Expand: the placeholder values (lower-case, as
// Expand writes them) that Expand maps to the repository ref (which must
// carry no tag or digest), or false when none does. It is exact:
// Expand(values) == ref whenever ok, and Match(Expand(v)) is v (v
// lower-cased) unless another v' expands to the same repository, which a
// template whose placeholders share a segment allows
// ("${namespace}-${type}" makes "a-b-c" of a/b-c and of a-b/c): such a
// repository stands for no one address, and Match refuses it. A
// repository whose segment is not a valid value (a namespace with "..",
// a host name with "_") does not match.
func (t *Template) Match(ref oci.Reference) (values map[string]string, ok bool) {
	if ref.Reference != "" {
		return nil, false
	}
	found := t.parses(ref.Name(), 2)
	if len(found) != 1 {
		return nil, false
	}
	got, err := t.Expand(found[0])
	if err != nil || got != ref {
		return nil, false
	}
	return found[0], true
}

// ListPrefix is the fixed part of the template before its first
// placeholder, split into the registry host and the repository path
// prefix every expansion starts with: ("ghcr.io", "acme/providers/") for
// "ghcr.io/acme/providers/${namespace}/${type}". For an OCI layout
// template registryHost is oci.LayoutPrefix and pathPrefix the directory
// path prefix ("/srv/store/providers/"). Both are "" when a placeholder
// is part of the registry host itself: expansions then span registries,
// and none of them can be listed.
func (t *Template) ListPrefix() (registryHost, pathPrefix string) {
	fixed := t.raw
	if loc := templateVar.FindStringIndex(t.raw); loc != nil {
		fixed = t.raw[:loc[0]]
	}
	if p, ok := strings.CutPrefix(fixed, oci.LayoutPrefix); ok {
		return oci.LayoutPrefix, p
	}
	host, path, ok := strings.Cut(fixed, "/")
	if !ok {
		return "", ""
	}
	return host, path
}

// token is a piece of a template: literal text, or a placeholder (name)
// at offset at of the raw template.
type token struct {
	literal string
	name    string
	at      int
}

func (t *Template) tokens() []token {
	var out []token
	last := 0
	for _, m := range templateVar.FindAllStringSubmatchIndex(t.raw, -1) {
		if m[0] > last {
			out = append(out, token{literal: t.raw[last:m[0]]})
		}
		out = append(out, token{name: t.raw[m[2]:m[3]], at: m[0]})
		last = m[1]
	}
	if last < len(t.raw) {
		out = append(out, token{literal: t.raw[last:]})
	}
	return out
}

// maxMatchName bounds the names Match reads, and maxMatchSteps the
// splits it tries: a template with several placeholders in one segment
// has many ways to split a long segment.
const (
	maxMatchName  = 4096
	maxMatchSteps = 1 << 20
)

// parses finds up to limit assignments of values to the template's
// placeholders whose substitution, as Expand writes it, is s. Values
// never hold "/", so a placeholder matches within one segment of s.
func (t *Template) parses(s string, limit int) []map[string]string {
	if len(s) > maxMatchName {
		return nil
	}
	return t.run(s, limit).found
}

// run is a matcher of s that has matched it (at most limit parses).
func (t *Template) run(s string, limit int) *matcher {
	toks := t.tokens()
	m := &matcher{t: t, s: s, toks: toks, limit: limit, steps: maxMatchSteps}
	if !repeatsPlaceholder(toks) {
		m.failed = map[[2]int]bool{}
	}
	m.match(0, 0, map[string]string{})
	return m
}

// repeatsPlaceholder says a placeholder appears twice among toks.
func repeatsPlaceholder(toks []token) bool {
	seen := map[string]bool{}
	for _, tok := range toks {
		if tok.name != "" {
			if seen[tok.name] {
				return true
			}
			seen[tok.name] = true
		}
	}
	return false
}

type matcher struct {
	t     *Template
	s     string
	toks  []token
	limit int
	steps int
	found []map[string]string
	// failed are the (token, position) from which nothing matched: with
	// no placeholder used twice, what matches from there does not depend
	// on the values bound before, so it is not tried again for every way
	// to reach it (a long segment of separators has very many). Nil when
	// a placeholder repeats.
	failed map[[2]int]bool
}

// match matches toks[ti:] against s[pos:] with the values bound so far.
func (m *matcher) match(ti, pos int, vals map[string]string) {
	if len(m.found) >= m.limit || m.steps <= 0 {
		return
	}
	state := [2]int{ti, pos}
	if m.failed[state] {
		return
	}
	found := len(m.found)
	m.matchFrom(ti, pos, vals)
	if m.failed != nil && len(m.found) == found && m.steps > 0 {
		m.failed[state] = true
	}
}

// matchFrom is match's work, once the state is known not to have failed.
func (m *matcher) matchFrom(ti, pos int, vals map[string]string) {
	m.steps--
	if ti == len(m.toks) {
		if pos == len(m.s) {
			m.found = append(m.found, maps.Clone(vals))
		}
		return
	}
	tok := m.toks[ti]
	if tok.name == "" {
		if strings.HasPrefix(m.s[pos:], tok.literal) {
			m.match(ti+1, pos+len(tok.literal), vals)
		}
		return
	}
	if v, bound := vals[tok.name]; bound { // a placeholder used twice
		if seg := m.encode(tok, v); strings.HasPrefix(m.s[pos:], seg) {
			m.match(ti+1, pos+len(seg), vals)
		}
		return
	}
	end := len(m.s)
	if i := strings.IndexByte(m.s[pos:], '/'); i >= 0 {
		end = pos + i
	}
	for e := pos + 1; e <= end && len(m.found) < m.limit; e++ {
		v, ok := m.s[pos:e], true
		if tok.name == "hostname" {
			v, ok = m.decode(tok, v)
		} else {
			switch nameEnd(v) {
			case nameNever:
				return // no longer value starting at pos is valid either
			case nameNotYet:
				continue
			} // valid: every byte before passed nameEnd (decode's validName, in one pass)
		}
		if !ok {
			continue
		}
		vals[tok.name] = v
		m.match(ti+1, e, vals)
		delete(vals, tok.name)
	}
}

// What the last byte of a prefix of a segment says of validName's
// verdict on that prefix, given no shorter prefix was nameNever.
const (
	nameValid  = iota // the prefix is valid
	nameNotYet        // it ends in a separator: invalid, a longer one may not be
	nameNever         // it and every longer prefix are invalid
)

// nameEnd judges seg's last byte, in constant time, as validName
// (^[a-z0-9]+(?:[._-][a-z0-9]+)*$) would the whole of seg: a byte it does
// not allow, or a separator first or after another, invalidates every
// longer prefix too.
func nameEnd(seg string) int {
	c := seg[len(seg)-1]
	switch {
	case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
		return nameValid
	case c != '.' && c != '_' && c != '-':
		return nameNever
	case len(seg) == 1 || isNameSeparator(seg[len(seg)-2]):
		return nameNever
	}
	return nameNotYet
}

func isNameSeparator(c byte) bool { return c == '.' || c == '_' || c == '-' }

// encode is what Expand writes for value v of tok.
func (m *matcher) encode(tok token, v string) string {
	if tok.name == "hostname" {
		return m.t.hostnameSegment(v, tok.at)
	}
	return v
}

// decode is the value of tok that Expand writes as seg, if valid.
func (m *matcher) decode(tok token, seg string) (string, bool) {
	if tok.name != "hostname" {
		return seg, validName.MatchString(seg)
	}
	h := seg
	if m.t.hostnameSegment("h:1", tok.at) != "h:1" { // in a path: the port's ":" is "_"
		if strings.Contains(h, ":") || strings.Count(h, "_") > 1 {
			return "", false
		}
		h = strings.Replace(h, "_", ":", 1)
	}
	return h, names.ValidHostname(h)
}
