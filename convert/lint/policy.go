package lint

import (
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// policyDecision records the policy file's decision on the version
// a tag names (Options.Policy): an error naming the rule when it denies
// it (the proxy would not serve it, push and mirror refuse it), a line
// naming the rule when it allows it. Tags that are not versions (latest,
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
	if !d.Allow {
		f.Severity, f.Message = SeverityError, "policy: denied by rule \""+d.Rule+"\": "+d.Reason
	}
	c.findings = append(c.findings, f)
}
