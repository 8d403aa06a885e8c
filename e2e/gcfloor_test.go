package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// The collector's floor (protocol/gcfloor), seen through the binary's own
// Go metrics: with the default --cache-bytes the proxy's live heap is far
// below a sixteenth of it, so after its collections GOGC is raised; an
// operator's GOGC is left alone, and so is GOGC when the floor is below
// the live heap (a tiny --cache-bytes).
func TestGCFloor(t *testing.T) {
	reg := testenv.StartRegistry(t)
	template := []string{"--provider-template", reg.Host + "/providers/${namespace}/${type}"}
	for _, tc := range []struct {
		name   string
		env    []string
		args   []string
		raised bool
	}{
		{"default", nil, nil, true},
		{"operator-gogc", []string{"GOGC=100"}, nil, false},
		{"floor-below-live-heap", nil, []string{"--cache-bytes", "1048576"}, false}, // 64 KiB
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServeEnv(t, tc.env, append(template, tc.args...)...)
			gogc := gogcAfterCollections(t, s, tc.raised)
			if raised := gogc > 100; raised != tc.raised {
				t.Fatalf("go_gc_gogc_percent %v after collections, want raised above 100: %v", gogc, tc.raised)
			}
		})
	}
}

// gogcAfterCollections asks for /metrics (whose rendering allocates)
// until the process has collected at least twice and, when raised is
// wanted, GOGC is above 100; it returns go_gc_gogc_percent.
func gogcAfterCollections(t *testing.T, s *served, raised bool) float64 {
	t.Helper()
	var gogc float64
	for range 500 {
		m := metricsText(t, s)
		gogc = metricValue(t, m, "go_gc_gogc_percent")
		if metricValue(t, m, "go_gc_duration_seconds_count") >= 2 && (!raised || gogc > 100) {
			break
		}
	}
	return gogc
}

func metricValue(t *testing.T, text, name string) float64 {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}
