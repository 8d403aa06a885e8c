package page

import (
	"time"
)

// policyView is the page's section on the policy file.
type policyView struct {
	File    string
	Rules   int
	Loaded  time.Time // when the policy in force was read (zero: not from a watched file)
	Checked time.Time
	Reloads uint64
	Errors  uint64
	// Error is why the file's current content is not in force ("" when
	// it is), and ErrorAt when the reload failed.
	Error   string
	ErrorAt time.Time
	Denied  []denialView
	// VulnDB is the vulnerability database's reloads (nil: none).
	VulnDB *vulnDBView
}

// vulnDBView is the vulnerability database's reloads, as the policy
// file's.
type vulnDBView struct {
	Dir             string
	Loaded, Checked time.Time
	Reloads, Errors uint64
	Error           string
	ErrorAt         time.Time
}

func (s *Page) vulnDBView() *vulnDBView {
	if s.cfg.VulnDB == nil {
		return nil
	}
	st := s.cfg.VulnDB.Status()
	v := &vulnDBView{Dir: st.Dir, Loaded: st.LoadedAt, Checked: st.CheckedAt, Reloads: st.Reloads, Errors: st.Errors}
	if !st.Current {
		v.Error, v.ErrorAt = st.LastError, st.LastErrorAt
	}
	return v
}

// policyView describes the policy in force, its file's reloads and what
// it denied of what clients asked for; nil without a policy.
func (s *Page) policyView() *policyView {
	pol := s.cfg.Policy.Current()
	if pol == nil {
		return nil
	}
	v := &policyView{Rules: pol.Rules(), Denied: s.seen.policyDenials(pol), VulnDB: s.vulnDBView()}
	if s.cfg.PolicyStatus != nil {
		st := s.cfg.PolicyStatus()
		v.File, v.Loaded, v.Checked, v.Reloads, v.Errors = st.File, st.LoadedAt, st.CheckedAt, st.Reloads, st.Errors
		if !st.Current {
			v.Error, v.ErrorAt = st.LastError, st.LastErrorAt
		}
	}
	return v
}
