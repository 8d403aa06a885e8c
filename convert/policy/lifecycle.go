package policy

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// A rule's lifecycle blocks: deprecated versions are served with a
// warning carrying their message, revoked versions are denied with it,
// and kept versions are never removed by prune.

// Bounds on the lifecycle blocks: their messages reach clients' output
// one line each, and a rule needs only a few of them.
const (
	maxLifecycleBlocks = 100
	maxMessageBytes    = 1024
)

// lifecycleBlock is one deprecated, revoked or keep block of a rule.
type lifecycleBlock struct {
	// versions are as written (nil when left out: every version).
	versions []string
	// sets are what each constraint of versions admits, any of them
	// matching; nil matches every version, pre-releases too.
	sets    []names.VersionSet
	message string
	// at is where the block is written: file:line.
	at string
}

// The lifecycle blocks a rule may have, and what each says.
var lifecycleBlockTypes = []hcl.BlockHeaderSchema{{Type: "deprecated"}, {Type: "revoked"}, {Type: "keep"}}

var (
	messageBlockSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "versions"}, {Name: "message", Required: true}}}
	keepBlockSchema    = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "versions"}}}
)

// parseLifecycle adds the lifecycle blocks of a rule's body to r, in the
// order of the file (the first matching block of a kind is the one that
// speaks for a version).
func parseLifecycle(r *rule, blocks hcl.Blocks) error {
	if len(blocks) > maxLifecycleBlocks {
		return posError(blocks[maxLifecycleBlocks].DefRange, fmt.Sprintf("the rule has %d deprecated, revoked and keep blocks, more than %d", len(blocks), maxLifecycleBlocks))
	}
	for _, b := range blocks {
		schema := messageBlockSchema
		if b.Type == "keep" {
			schema = keepBlockSchema
		}
		content, diags := b.Body.Content(schema)
		if diags.HasErrors() {
			return diagError(diags)
		}
		lb, err := parseLifecycleBlock(b.Type, content)
		if err != nil {
			return err
		}
		lb.at = fmt.Sprintf("%s:%d", b.DefRange.Filename, b.DefRange.Start.Line)
		switch b.Type {
		case "deprecated":
			r.deprecated = append(r.deprecated, lb)
		case "revoked":
			r.revoked = append(r.revoked, lb)
		case "keep":
			r.keep = append(r.keep, lb)
		}
	}
	return nil
}

func parseLifecycleBlock(kind string, content *hcl.BodyContent) (*lifecycleBlock, error) {
	lb := &lifecycleBlock{}
	if a, ok := content.Attributes["versions"]; ok {
		list, err := decodeStringOrList(a)
		if err != nil {
			return nil, err
		}
		if len(list) == 0 {
			return nil, posError(a.Expr.Range(), kind+": versions is empty: leave it out to mean every version")
		}
		for _, s := range list {
			spec, err := names.ParseConstraints(s)
			if err != nil {
				return nil, posError(a.Expr.Range(), fmt.Sprintf("%s: %v", kind, err))
			}
			if len(spec) == 0 {
				return nil, posError(a.Expr.Range(), kind+": versions has an empty constraint: leave versions out to mean every version")
			}
			lb.sets = append(lb.sets, names.Admitting(spec))
		}
		lb.versions = list
	}
	if a, ok := content.Attributes["message"]; ok {
		if err := decode(a, &lb.message); err != nil {
			return nil, err
		}
		if err := checkMessage(lb.message); err != nil {
			return nil, posError(a.Expr.Range(), kind+": "+err.Error())
		}
	}
	return lb, nil
}

// checkMessage refuses a message clients could not be shown as written:
// empty, longer than maxMessageBytes, or with control characters (a
// newline would split the one line a warning or log entry gives it).
func checkMessage(msg string) error {
	if strings.TrimSpace(msg) == "" {
		return fmt.Errorf("message is empty: say why, and what to use instead")
	}
	if len(msg) > maxMessageBytes {
		return fmt.Errorf("message is longer than %d bytes", maxMessageBytes)
	}
	if i := strings.IndexFunc(msg, unicode.IsControl); i >= 0 {
		return fmt.Errorf("message has a control character (%q) at byte %d: it must be one line", msg[i:i+1], i)
	}
	return nil
}

// ValidMessage reports whether msg is a message a policy file could
// give a deprecation: what a record read back from elsewhere (another
// replica's) must be to be shown.
func ValidMessage(msg string) bool { return checkMessage(msg) == nil }

// decodeStringOrList decodes a's value, a string or a list of strings,
// as a list.
func decodeStringOrList(a *hcl.Attribute) ([]string, error) {
	if v, diags := a.Expr.Value(nil); !diags.HasErrors() && v.Type() == cty.String {
		var s string
		if err := decode(a, &s); err != nil {
			return nil, err
		}
		return []string{s}, nil
	}
	var list []string
	return list, decodeList(a, &list)
}

// describe is the versions a block is about, as written.
func (b *lifecycleBlock) describe() string {
	if b.sets == nil {
		return "every version"
	}
	if len(b.versions) == 1 {
		return fmt.Sprintf("versions = %q", b.versions[0])
	}
	qs := make([]string, len(b.versions))
	for i, s := range b.versions {
		qs[i] = fmt.Sprintf("%q", s)
	}
	return "versions = [" + strings.Join(qs, ", ") + "]"
}
