package proxy

import (
	"math"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

// Request budgets: a policy file client with a rate (docs/policy.md,
// "Clients") gets a token bucket of its own, so one runaway CI loop
// cannot starve the other clients or the registry; past it, 429 with
// Retry-After. Buckets live as long as their client's name and budget:
// a reload that keeps both keeps the bucket.

// budgets are the clients' token buckets and what they counted.
type budgets struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	counts  *prometheus.CounterVec // by client name (the file's, a closed set) and outcome
}

// bucket is one client's limiter, for the budget it was made for.
type bucket struct {
	rate  float64
	burst int
	lim   *rate.Limiter
}

func newBudgets(reg prometheus.Registerer) *budgets {
	b := &budgets{buckets: map[string]*bucket{}, counts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oci_tofu_client_requests_total",
		Help: "Requests of the policy file's clients by client name and outcome (accepted, limited: over the client's rate; expired: its tokens expired).",
	}, []string{"client", "outcome"})}
	reg.MustRegister(b.counts)
	return b
}

// spend counts a request of client c (nil: none, an operator or a
// registry user, who have no budget) and is nil when its budget allows
// it, the 429 to answer (respond.Limited, with Retry-After) when not.
func (b *budgets) spend(c *policy.Client) error {
	if c == nil {
		return nil
	}
	if c.Rate <= 0 || b.limiter(c).Allow() {
		b.counts.WithLabelValues(c.Name, "accepted").Inc()
		return nil
	}
	b.counts.WithLabelValues(c.Name, "limited").Inc()
	wait := int(math.Ceil(1 / c.Rate))
	return respond.Limited(wait, "client %s is over its request budget (%g requests per second, bursts of %d): retry after %d s", c.Name, c.Rate, c.Burst, wait)
}

// limiter is c's bucket, made anew when its budget changed.
func (b *budgets) limiter(c *policy.Client) *rate.Limiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	k, ok := b.buckets[c.Name]
	if !ok || k.rate != c.Rate || k.burst != c.Burst {
		k = &bucket{rate: c.Rate, burst: c.Burst, lim: rate.NewLimiter(rate.Limit(c.Rate), c.Burst)}
		b.buckets[c.Name] = k
	}
	return k.lim
}

// expired counts a request of a client whose tokens expired.
func (b *budgets) expired(c *policy.Client) { b.counts.WithLabelValues(c.Name, "expired").Inc() }

// ticketBudgets are the budgets as the tickets of signed URLs spend
// them (respond.TicketBudgets): a tokenless download whose ticket names
// a policy file client spends from its budget as its token would.
type ticketBudgets struct{ s *Server }

func (t ticketBudgets) Spend(name string) error {
	return t.s.budgets.spend(t.s.opts.Policy.Current().Client(name))
}

func (t ticketBudgets) Budgets() bool { return t.s.opts.Policy.Current().HasBudgets() }
