package lint

import (
	"fmt"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// policyDecision records the policy file's decision on the version
// a tag names (Options.Policy): an error naming the rule when it denies
// or revokes it (the proxy would not serve it, push and mirror refuse
// it), a warning with the message when it deprecates it (the proxy
// warns clients of it), a line naming the rule when it allows it. Tags that are not versions (latest,
// digests) name no version to decide on.
func (c *checker) policyDecision() {
	kind := c.kind
	if c.opts.Policy == nil || kind == "" || c.opts.PolicyAddress == nil {
		return
	}
	v, ok := names.VersionFromTag(c.tag)
	if !ok {
		return
	}
	addr, err := c.opts.PolicyAddress(kind)
	if err != nil {
		c.findings = append(c.findings, Finding{Reference: c.ref, Severity: SeverityError, Message: "policy: " + err.Error()})
		return
	}
	d := c.opts.Policy.Decide(kind, addr, v.String())
	f := Finding{Reference: c.ref, Severity: SeverityOK, Message: "policy: allowed by rule \"" + d.Rule + "\": " + d.Reason}
	switch {
	case !d.Allow:
		f.Severity, f.Message = SeverityError, "policy: denied by rule \""+d.Rule+"\": "+d.Reason
	case d.Deprecated != "":
		f.Severity, f.Message = SeverityWarning, fmt.Sprintf("policy: %s is deprecated by rule %q: %s", v, d.Rule, d.Deprecated)
	}
	c.findings = append(c.findings, f)
}
