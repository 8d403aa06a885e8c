package prune

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParsePeriod reads a retention period: whole days ("90d"), as retention
// is usually said, or a Go duration ("36h").
func ParsePeriod(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil || n == 0 {
			return 0, fmt.Errorf("invalid period %q: write a number of days (90d) or a duration (36h)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("invalid period %q: write a number of days (90d) or a duration (36h)", s)
	}
	return d, nil
}

// FormatPeriod writes a period as ParsePeriod reads it, in days when it
// is whole days.
func FormatPeriod(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
