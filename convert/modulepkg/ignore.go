package modulepkg

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// IgnoreRules is a parsed .terraformignore file, with the semantics of
// HashiCorp's go-slug (which Terraform and HCP Terraform use to pack
// configurations):
//
//   - blank lines and lines starting with # are skipped; lines are trimmed;
//   - a leading ! re-includes what earlier rules excluded;
//   - a leading / anchors the pattern at the module root, otherwise it
//     matches at any depth (as if written **/pattern);
//   - a trailing / matches a directory and everything below it;
//   - * and ? never match /, ** matches any number of directories,
//     [a-z] classes and \ escapes work as in shell globs.
//
// The last rule that matches a path decides. Unlike go-slug, a file that no
// rule names inherits the decision made for its directory, so "vendor"
// (without a slash) excludes the vendor directory's content as git would.
type IgnoreRules struct {
	rules []ignoreRule
}

type ignoreRule struct {
	pattern string
	negated bool
	re      *regexp.Regexp
}

// ParseIgnoreRules reads .terraformignore content.
func ParseIgnoreRules(r io.Reader) (*IgnoreRules, error) {
	rs := &IgnoreRules{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		p := strings.TrimSpace(sc.Text())
		if p == "" || p[0] == '#' {
			continue
		}
		rule := ignoreRule{pattern: p}
		if p[0] == '!' {
			rule.negated = true
			p = p[1:]
		}
		if p == "" || p == "/" {
			continue
		}
		if strings.HasSuffix(p, "/") {
			p += "**"
		}
		if strings.HasPrefix(p, "/") {
			p = p[1:]
		} else {
			p = "**/" + p
		}
		re, err := globRegexp(p)
		if err != nil {
			return nil, fmt.Errorf(".terraformignore line %d: invalid pattern %q: %v", line, rule.pattern, err)
		}
		rule.re = re
		rs.rules = append(rs.rules, rule)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading .terraformignore: %w", err)
	}
	return rs, nil
}

// globRegexp turns a slash-separated glob into an anchored regexp.
func globRegexp(p string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '*':
			if i+1 < len(p) && p[i+1] == '*' {
				i++
				if i+1 < len(p) && p[i+1] == '/' {
					i++
				}
				if i+1 == len(p) {
					b.WriteString(".*")
				} else {
					b.WriteString("(.*/)?")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(p[i+1:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unterminated [")
			}
			class := p[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j + 1
		case '\\':
			if i+1 < len(p) {
				i++
				b.WriteString(regexp.QuoteMeta(string(p[i])))
			} else {
				b.WriteString(`\\`)
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// match reports whether some rule matches path, and if so whether the last
// such rule excludes it. Directories are tried both as "dir" and "dir/".
func (rs *IgnoreRules) match(path string, dir bool) (matched, excluded bool) {
	if rs == nil {
		return false, false
	}
	for _, r := range rs.rules {
		if r.re.MatchString(path) || dir && r.re.MatchString(path+"/") {
			matched, excluded = true, !r.negated
		}
	}
	return matched, excluded
}

// hasNegations reports whether any rule re-includes paths, in which case an
// excluded directory must still be walked.
func (rs *IgnoreRules) hasNegations() bool {
	if rs == nil {
		return false
	}
	for _, r := range rs.rules {
		if r.negated {
			return true
		}
	}
	return false
}

// Excluded reports whether path (slash-separated, relative to the module
// root) is left out, given whether its parent directory was.
func (rs *IgnoreRules) Excluded(path string, dir, parentExcluded bool) bool {
	if matched, excluded := rs.match(path, dir); matched {
		return excluded
	}
	return parentExcluded
}
