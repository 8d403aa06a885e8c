package repotemplate

import (
	"strings"
	"testing"
)

// Matching a long name of many separators against placeholders sharing a
// segment is bounded work: it took 1 s for a 255-character segment and
// two minutes for a 4,000-character one (each split tried was validated
// from its start again, and the same failing rest tried again for every
// way to reach it), and a registry notification may carry 1,000 names.
// Now each (token, position) that matched nothing is tried once, and
// each byte is judged in constant time as a value grows (nameEnd): the
// steps taken stay within the states there are, (tokens + 1) x
// (characters + 1), once for each parse Match may find and once more.
func TestMatchLongAmbiguousNamesIsBoundedWork(t *testing.T) {
	for _, c := range []struct{ tpl, repo string }{
		{"reg.example/m/${namespace}-${name}-${system}", "m/" + strings.Repeat("a-", 126)},
		{"reg.example/m/${namespace}-${name}-${system}", "m/" + strings.Repeat("a-", 126) + "a"},
		{"reg.example/p/${namespace}-${type}", "p/" + strings.Repeat("a-", 126)},
		{"reg.example/m/${namespace}-${name}-${system}", "m/" + strings.Repeat("a-", 2000)},
		{"reg.example/p/${namespace}-${type}", "p/" + strings.Repeat("a-", 2000)},
		{"reg.example/p/${namespace}/${type}", "p/" + strings.Repeat("a-", 2000)},
		{"reg.example/m/${namespace}${name}${system}", "m/" + strings.Repeat("a", 4000)},
	} {
		tpl, err := ParseTemplate(c.tpl, []string{"namespace", "name", "system", "type"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		const limit = 2 // as Match asks
		name := "reg.example/" + c.repo
		m := tpl.run(name, limit)
		steps, states := maxMatchSteps-m.steps, (len(m.toks)+1)*(len(name)+1)
		if steps > (limit+1)*states {
			t.Errorf("%s against %d characters: %d steps, want at most %d", c.tpl, len(c.repo), steps, (limit+1)*states)
		}
	}
}
