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
	// base marks a pattern without "/", "**" or a class: it can only
	// match the last element of a path, so only that is compared.
	base bool
	// literal is the pattern's longest run of literal characters: a
	// name without it cannot match, and is not given to re.
	literal string
	re      *regexp.Regexp
	// cost is the length of re's source, what one run costs per byte.
	cost int64
}

// Bounds of .terraformignore (variables so that tests can change them):
// the rules are the module's, so a module pulled from an origin chooses
// them, and each is tried on every entry of the walk.
var (
	maxIgnoreFile    = 64 << 10
	maxIgnoreRules   = 1000
	maxIgnorePattern = 256
)

// ParseIgnoreRules reads .terraformignore content: at most 1,000 rules of
// at most 256 bytes (the content itself is bounded by its reader).
func ParseIgnoreRules(r io.Reader) (*IgnoreRules, error) {
	rs := &IgnoreRules{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		rule, ok, err := parseIgnoreLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", IgnoreFileName, line, err)
		}
		if !ok {
			continue
		}
		if len(rs.rules) == maxIgnoreRules {
			return nil, fmt.Errorf("%s has more than %d rules, more than a module package may have", IgnoreFileName, maxIgnoreRules)
		}
		rs.rules = append(rs.rules, rule)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", IgnoreFileName, err)
	}
	return rs, nil
}

// parseIgnoreLine reads one line: a rule, or nothing (ok false) for a
// blank line or a comment.
func parseIgnoreLine(text string) (rule ignoreRule, ok bool, err error) {
	p := strings.TrimSpace(text)
	if p == "" || p[0] == '#' {
		return ignoreRule{}, false, nil
	}
	if len(p) > maxIgnorePattern {
		return ignoreRule{}, false, fmt.Errorf("a pattern of %d bytes, longer than the %d allowed", len(p), maxIgnorePattern)
	}
	rule = ignoreRule{pattern: p}
	if p[0] == '!' {
		rule.negated = true
		p = p[1:]
	}
	if p == "" || p == "/" {
		return ignoreRule{}, false, nil
	}
	rule.base = !strings.ContainsAny(p, "/[") && !strings.Contains(p, "**")
	switch {
	case rule.base:
	case strings.HasPrefix(p, "/"):
		p = p[1:]
	default:
		p = "**/" + p
	}
	if strings.HasSuffix(p, "/") {
		p += "**"
	}
	re, literal, err := globRegexp(p)
	if err != nil {
		return ignoreRule{}, false, fmt.Errorf("invalid pattern %q: %v", rule.pattern, err)
	}
	rule.re, rule.literal, rule.cost = re, literal, int64(len(re.String()))
	return rule, true, nil
}

// globRegexp turns a slash-separated glob into an anchored regexp, and
// returns its longest run of literal characters.
func globRegexp(p string) (*regexp.Regexp, string, error) {
	var b strings.Builder
	var lit literalRuns
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '*':
			lit.breakRun()
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
			lit.breakRun()
			b.WriteString("[^/]")
		case '[':
			lit.breakRun()
			j := strings.IndexByte(p[i+1:], ']')
			if j < 0 {
				return nil, "", fmt.Errorf("unterminated [")
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
			}
			lit.add(p[i])
			b.WriteString(regexp.QuoteMeta(string(p[i])))
		default:
			lit.add(c)
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return re, lit.longest(), err
}

// literalRuns finds the longest run of literal characters of a glob.
type literalRuns struct {
	run, best []byte
}

func (l *literalRuns) add(c byte) { l.run = append(l.run, c) }

func (l *literalRuns) breakRun() {
	if len(l.run) > len(l.best) {
		l.best = append(l.best[:0], l.run...)
	}
	l.run = l.run[:0]
}

func (l *literalRuns) longest() string {
	l.breakRun()
	return string(l.best)
}

// matchBudget is the matching work a walk may still spend on its
// .terraformignore, in steps: looking for a rule's literal in a name
// costs a step per 8 bytes, running the rule's expression the product of
// the expression's and the name's lengths (Go's matcher is linear in
// both). A nil budget is unbounded.
type matchBudget struct{ left int64 }

// maxIgnoreWork is a walk's matching budget, in steps: counted, so the
// same on any machine. The costliest patterns spend it in about a second
// of one core of a small CI machine (BenchmarkIgnoreMatchingBudget
// reports the time a step takes); rules that name what they leave out
// need far less for the largest package.
var maxIgnoreWork int64 = 100_000_000

func (b *matchBudget) spend(n int64) {
	if b != nil {
		b.left -= n
	}
}

func (b *matchBudget) spent() bool { return b != nil && b.left < 0 }

// matches reports whether the rule matches name (a path, or a directory's
// path and "/").
func (r *ignoreRule) matches(name string, b *matchBudget) bool {
	if r.base {
		name = name[strings.LastIndexByte(name, '/')+1:]
	}
	b.spend(int64(len(name))/8 + 1)
	if !strings.Contains(name, r.literal) {
		return false
	}
	b.spend(r.cost * int64(len(name)+1))
	return r.re.MatchString(name)
}

// match reports whether some rule matches path, and if so whether the
// last such rule excludes it. Directories are tried both as "dir" and
// "dir/". Once b is spent no further rule is tried (the answer is then
// meaningless: the caller refuses the walk).
func (rs *IgnoreRules) match(path string, dir bool, b *matchBudget) (matched, excluded bool) {
	if rs == nil {
		return false, false
	}
	asDir := ""
	if dir {
		asDir = path + "/"
	}
	for i := len(rs.rules) - 1; i >= 0 && !b.spent(); i-- {
		r := &rs.rules[i]
		if r.matches(path, b) || dir && !b.spent() && r.matches(asDir, b) {
			return true, !r.negated
		}
	}
	return false, false
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
	return rs.excluded(path, dir, parentExcluded, nil)
}

// excluded is Excluded spending from b.
func (rs *IgnoreRules) excluded(path string, dir, parentExcluded bool, b *matchBudget) bool {
	if matched, excluded := rs.match(path, dir, b); matched {
		return excluded
	}
	return parentExcluded
}
