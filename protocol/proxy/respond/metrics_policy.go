package respond

import (
	"sync"
	"sync/atomic"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/policyfile"
	"github.com/prometheus/client_golang/prometheus"
)

// WatchPolicy counts the policy's decisions and serves the reloads of
// its file that status reports (nil: no policy file).
func (m *Metrics) WatchPolicy(status func() policyfile.Status) {
	m.policy = newPolicyMetrics(m.reg, status)
}

// policyMetrics count the policy's decisions and report its file's
// reloads. The decisions' labels are the kind (provider, module, tofu),
// the name of the rule that decided — written in the policy file, which
// holds at most policy.MaxRules rules, or "default" — and allow or deny:
// never anything a client sent. When a reload drops a rule, its series
// go too, so the number of series stays bounded by the file in force.
type policyMetrics struct {
	decisions *prometheus.CounterVec
	// vulnerable counts the decisions on versions with known
	// vulnerabilities the policy acted on, by decision.
	vulnerable *prometheus.CounterVec
	mu         sync.Mutex
	gen        atomic.Uint64 // the policy generation counted contains only its rules
	counted    sync.Map      // policyRuleKey → true: the series that exist
}

type policyRuleKey struct {
	kind names.Kind
	rule string
}

func newPolicyMetrics(reg *prometheus.Registry, status func() policyfile.Status) *policyMetrics {
	m := &policyMetrics{decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oci_tofu_policy_decisions_total", Help: "Policy decisions that shaped an answer, by kind, deciding rule (its name in the policy file, or default) and decision (allow or deny).",
	}, []string{"kind", "rule", "decision"}),
		vulnerable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "oci_tofu_policy_vulnerable_decisions_total", Help: "Policy decisions on versions whose SBOM matches known vulnerabilities the policy acts on (its vulnerabilities blocks), by decision (allow: served with a warning; deny).",
		}, []string{"decision"})}
	reg.MustRegister(m.decisions, m.vulnerable)
	if status == nil {
		return m
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "oci_tofu_policy_reloads_total", Help: "Policies put in force from the policy file after the first.",
		}, func() float64 { return float64(status().Reloads) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "oci_tofu_policy_reload_errors_total", Help: "Reloads of the policy file that failed (unreadable or invalid); the last good policy stayed in force.",
		}, func() float64 { return float64(status().Errors) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "oci_tofu_policy_last_reload_success_timestamp_seconds", Help: "When the policy in force was read from its file (Unix time).",
		}, func() float64 { return float64(status().LoadedAt.UnixNano()) / 1e9 }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "oci_tofu_policy_file_current", Help: "1 when the policy in force is the policy file's current content, 0 when the file's last reload failed.",
		}, func() float64 {
			if status().Current {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "oci_tofu_policy_rules", Help: "Rules of the policy in force.",
		}, func() float64 { return float64(status().Rules) }),
	)
	return m
}

// count counts decision d of pol (generation gen) on kind.
func (m *policyMetrics) count(pol *policy.Policy, gen uint64, kind names.Kind, d policy.Decision) {
	if m.gen.Load() != gen {
		m.forgetDroppedRules(pol, gen)
	}
	outcome := "allow"
	if !d.Allow {
		outcome = "deny"
	}
	key := policyRuleKey{kind, d.Rule}
	if _, ok := m.counted.Load(key); !ok {
		m.counted.Store(key, true)
	}
	m.decisions.WithLabelValues(string(kind), d.Rule, outcome).Inc()
	if len(d.Vulnerable) > 0 {
		m.vulnerable.WithLabelValues(outcome).Inc()
	}
}

// forgetDroppedRules deletes the series of rules pol does not have, once
// per generation.
func (m *policyMetrics) forgetDroppedRules(pol *policy.Policy, gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gen.Load() >= gen {
		return
	}
	m.counted.Range(func(k, _ any) bool {
		key := k.(policyRuleKey)
		if key.rule != policy.DefaultRule && !pol.HasRule(key.kind, key.rule) {
			m.decisions.DeletePartialMatch(prometheus.Labels{"kind": string(key.kind), "rule": key.rule})
			m.counted.Delete(k)
		}
		return true
	})
	m.gen.Store(gen)
}

// CountDecision counts decision d of pol (generation gen) on version v
// of address and records a denial for the page; fromFacts says it was
// made on facts read from the registry (min_age, signers). The gate
// tells it every decision that shaped an answer (sources.go: judge).
func (s *Responder) CountDecision(pol *policy.Policy, gen uint64, kind names.Kind, address string, v *names.Version, d policy.Decision, fromFacts bool) {
	s.Metrics.policy.count(pol, gen, kind, d)
	if !d.Allow && v != nil {
		s.Observer.PolicyDenied(kind, address, *v, d, fromFacts)
	}
}
