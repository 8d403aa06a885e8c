package proxy

import (
	"fmt"
	"net/http"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

// WhoamiPath answers who the caller is to the proxy: its client, what it
// may read and what is left of its request budget (docs/policy.md,
// "Clients"). It takes the token the protocols take.
const WhoamiPath = "/v1/whoami"

// whoami is WhoamiPath's answer.
type whoami struct {
	// Authentication is "off" (anyone reads everything), "operator" (a
	// token of --auth-token-file: reads everything), "client" (a policy
	// file client) or "registry" (the registry decides, for the user
	// named in Client).
	Authentication string     `json:"authentication"`
	Client         string     `json:"client,omitempty"`
	Expires        *time.Time `json:"expires,omitempty"`
	// Providers and Modules are the client's patterns; Tofu whether it
	// reads OpenTofu releases.
	Providers []string `json:"providers,omitempty"`
	Modules   []string `json:"modules,omitempty"`
	Tofu      bool     `json:"tofu,omitempty"`
	Budget    *budget  `json:"budget,omitempty"`
}

// budget is a client's request budget and what is left of its burst.
type budget struct {
	Rate      float64 `json:"requests_per_second"`
	Burst     int     `json:"burst"`
	Available float64 `json:"available"`
}

// routeWhoami serves WhoamiPath, behind client authentication.
func (s *Server) routeWhoami() {
	s.mux.Handle(WhoamiPath, s.instrument("whoami", s.Authenticate(http.HandlerFunc(s.serveWhoami))))
}

func (s *Server) serveWhoami(w http.ResponseWriter, r *http.Request) {
	if !respond.AllowRead(w, r) {
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if !s.clientAuth {
		respond.WriteJSON(w, r, whoami{Authentication: "off"})
		return
	}
	// Authenticate has named the caller: its reader says who it is.
	var c *policy.Client
	switch who := respond.ReaderOf(r.Context()).(type) {
	case nil:
		respond.WriteJSON(w, r, whoami{Authentication: "operator"})
		return
	case *registryID:
		respond.WriteJSON(w, r, whoami{Authentication: "registry", Client: who.User})
		return
	case scoped:
		c = who.Client
	}
	ans := whoami{Authentication: "client", Client: c.Name, Providers: c.Providers(), Modules: c.Modules(), Tofu: c.Tofu()}
	if !c.Expires.IsZero() {
		ans.Expires = &c.Expires
	}
	if c.Rate > 0 {
		ans.Budget = &budget{Rate: c.Rate, Burst: c.Burst, Available: s.budgets.limiter(c).Tokens()}
	}
	respond.WriteJSON(w, r, ans)
}

// callerSummary says, for the page, who a request's bearer token names
// ("" for none, or no token).
func (s *Server) callerSummary(r *http.Request) string {
	if r.Header.Get("Authorization") == "" {
		return ""
	}
	cred, err := s.credentialOf(r)
	c := cred.client
	switch {
	case err != nil:
		return "Your token is not accepted: " + err.Error()
	case cred.registry != nil:
		return "Registry user " + cred.registry.User + ": the registry decides what it reads."
	case c == nil:
		return "An operator token (--auth-token-file): it reads everything."
	}
	sum := "Client " + c.Name + ": " + c.Summary() + "."
	if c.Rate > 0 {
		sum += fmt.Sprintf(" %.0f of its burst left.", s.budgets.limiter(c).Tokens())
	}
	return sum
}
