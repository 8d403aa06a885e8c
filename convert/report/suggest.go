package report

import (
	"strings"

	"github.com/xrash/smetrics"
)

// Closest is the candidate most like s (a command or flag name typed
// wrong), or "" when none is close enough to be what was meant: one edit
// or swap of neighbours away (a typo in a short name such as --kye), or
// else the best Jaro-Winkler match, as urfave/cli's own suggestions use.
// (urfave/cli's SuggestFlag and SuggestCommand always suggest something,
// however far, and "help", so they cannot say "no suggestion".)
func Closest(s string, candidates []string) string {
	s = strings.ToLower(s)
	for _, c := range candidates {
		if len(s) >= 3 && len(c) >= 3 && editDistance(s, c) <= 1 {
			return c
		}
	}
	best, score := "", 0.0
	for _, c := range candidates {
		if d := smetrics.JaroWinkler(s, c, 0.7, 4); d > score {
			best, score = c, d
		}
	}
	if score < 0.75 {
		return ""
	}
	return best
}

// editDistance counts the insertions, deletions, substitutions and swaps
// of neighbouring letters that turn a into b (optimal string alignment;
// smetrics has Levenshtein, which counts a swap as two).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2, prev, cur := make([]int, len(rb)+1), make([]int, len(rb)+1), make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
