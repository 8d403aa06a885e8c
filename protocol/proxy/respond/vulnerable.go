package respond

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oci-tofu/oci-tofu/convert/vulns"
)

// MaxVulnerableVersions bounds the provider versions the
// oci_tofu_vulnerable_versions gauge remembers: past it, versions found
// vulnerable are not counted (the gauge stays at the bound).
const MaxVulnerableVersions = 1 << 16

// vulnerableVersions is the set of provider versions (address and
// version) this replica found to have known vulnerabilities by the
// vulnerability database in force, where their SBOMs were matched (the
// policy's decisions, the page's SBOM views). The set belongs to one
// database (its fingerprint): when another is in force, it starts
// empty, counting again as versions are matched against the new one;
// a match by a database no longer in force is not counted.
type vulnerableVersions struct {
	current     func() string // the fingerprint of the database in force
	mu          sync.Mutex
	fingerprint string
	set         map[string]struct{}
}

// WatchVulnerable serves the oci_tofu_vulnerable_versions gauge, the
// versions found vulnerable by the database whose fingerprint current
// returns (NoteVulnerable).
func (m *Metrics) WatchVulnerable(current func() string) {
	v := &vulnerableVersions{current: current, set: map[string]struct{}{}}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "oci_tofu_vulnerable_versions",
		Help: "Provider versions (address and version) this replica found to have known vulnerabilities in their SBOMs by the vulnerability database in force, whatever the policy does about them (policy decisions and SBOM pages; at most 65536).",
	}, v.count))
	m.vulnerable = v
}

// NoteVulnerable records what the database of fingerprint found in
// version of the provider at address: found, some known vulnerability
// in a platform's SBOM; not found, none (any longer). Without
// WatchVulnerable it does nothing.
func (m *Metrics) NoteVulnerable(address, version, fingerprint string, found bool) {
	if v := m.vulnerable; v != nil {
		v.note(address+" "+version, fingerprint, found)
	}
}

func (v *vulnerableVersions) note(key, fingerprint string, found bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.inForce(fingerprint) {
		return
	}
	if !found {
		delete(v.set, key)
	} else if len(v.set) < MaxVulnerableVersions {
		v.set[key] = struct{}{}
	}
}

// inForce reports whether fingerprint is the database in force, the set
// emptied first if it was counted by another. Called with mu held.
func (v *vulnerableVersions) inForce(fingerprint string) bool {
	cur := v.current()
	if cur != v.fingerprint {
		v.fingerprint, v.set = cur, map[string]struct{}{}
	}
	return fingerprint == cur
}

func (v *vulnerableVersions) count() float64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.inForce("")
	return float64(len(v.set))
}

// WatchVulnDB serves the reloads of the vulnerability database (serve
// --vuln-db) as the policy file's are: reloads, failed reloads (the
// database in force staying) and whether the one in force is the
// directory's as last checked.
func (m *Metrics) WatchVulnDB(status func() vulns.LiveStatus) {
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "oci_tofu_vuln_db_reloads_total", Help: "Vulnerability databases put in force from --vuln-db after the first.",
		}, func() float64 { return float64(status().Reloads) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "oci_tofu_vuln_db_reload_errors_total", Help: "Checks of --vuln-db that found it changed but not whole (an index or entry file missing, half written or invalid); the database in force stayed.",
		}, func() float64 { return float64(status().Errors) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "oci_tofu_vuln_db_current", Help: "1 when the vulnerability database in force is --vuln-db's content as last checked, 0 when its last reload failed.",
		}, func() float64 {
			if status().Current {
				return 1
			}
			return 0
		}),
	)
}
