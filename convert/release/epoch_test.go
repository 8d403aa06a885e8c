package release

import (
	"testing"
	"time"
)

// SOURCE_DATE_EPOCH dates signatures: unset is the zero time, a number
// of seconds that time, anything else an error naming the variable.
func TestSourceDateEpoch(t *testing.T) {
	for _, c := range []struct {
		env  string
		want time.Time
		bad  bool
	}{{"", time.Time{}, false}, {"1700000000", time.Unix(1700000000, 0), false}, {"yesterday", time.Time{}, true}} {
		t.Setenv("SOURCE_DATE_EPOCH", c.env)
		got, err := SourceDateEpoch()
		if !got.Equal(c.want) || (err != nil) != c.bad {
			t.Errorf("%q: %v, %v", c.env, got, err)
		}
	}
}
