package vulnscan

import "testing"

// vulns --exit-code exits 3 when a version is affected (as govulncheck
// does), else 4 when a platform has no SBOM to scan, else 0.
func TestTotalsExitStatus(t *testing.T) {
	for _, c := range []struct {
		t      Totals
		status int
		why    string
	}{
		{Totals{Versions: 2, Platforms: 4}, 0, ""},
		{Totals{AffectedVersions: 2, WithoutSBOM: 1}, ExitAffected, "2 versions affected"},
		{Totals{WithoutSBOM: 1}, ExitWithoutSBOM, "1 platform without an SBOM"},
	} {
		if status, why := c.t.ExitStatus(); status != c.status || why != c.why {
			t.Errorf("%+v: %d %q, want %d %q", c.t, status, why, c.status, c.why)
		}
	}
}
