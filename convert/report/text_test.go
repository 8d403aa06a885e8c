package report

import "testing"

// WrapWords fills lines up to the width, a longer word standing alone,
// each line indented.
func TestWrapWords(t *testing.T) {
	got := WrapWords("the quick brown fox jumps over a a-very-long-word-indeed", 10, "  ")
	want := "  the quick\n  brown fox\n  jumps over\n  a\n  a-very-long-word-indeed"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := WrapWords("  ", 10, "  "); got != "" {
		t.Errorf("blank: %q", got)
	}
}

// Quoted quotes each argument, so spaces and empty ones show.
func TestQuoted(t *testing.T) {
	if got, want := Quoted([]string{"a b", "", `"x"`}), `"a b" "" "\"x\""`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
