package moduledoc

import "encoding/json"

// Package is a module package's interface: its root module, its
// submodules (modules/*) and its examples (examples/*). Its JSON field
// names are stable.
type Package struct {
	Root       Module   `json:"root"`
	Submodules []Module `json:"submodules"`
	Examples   []Module `json:"examples"`
	// Diagnostics are about the package as a whole (limits reached,
	// directories that could not be listed).
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// Module is one module directory's interface.
type Module struct {
	// Path is the directory, slash-separated from the package root; ""
	// for the root module.
	Path string `json:"path"`
	// README is the path of its README from the package root, or "".
	README string `json:"readme"`
	// Files are the configuration files read, from the package root.
	Files             []string              `json:"files"`
	Inputs            []Input               `json:"inputs"`
	Outputs           []Output              `json:"outputs"`
	RequiredCore      []string              `json:"required_core"`
	RequiredProviders []ProviderRequirement `json:"required_providers"`
	ModuleCalls       []ModuleCall          `json:"module_calls"`
	Resources         []Resource            `json:"resources"`
	Diagnostics       []Diagnostic          `json:"diagnostics"`
}

// Input is a variable block.
type Input struct {
	Name string `json:"name"`
	// Type is the type constraint as written, "" when none is given
	// (any value is accepted).
	Type string `json:"type"`
	// TypeJSON is the type constraint in cty's JSON type encoding
	// (optional attributes as a third element), as tofu show -json
	// prints it; "dynamic" when none is given.
	TypeJSON json.RawMessage `json:"type_json"`
	// Default is the default value converted to the type constraint
	// (optional attributes' defaults applied), as OpenTofu holds it;
	// absent when there is none or it cannot be shown.
	Default    json.RawMessage `json:"default,omitempty"`
	Required   bool            `json:"required"`
	Sensitive  bool            `json:"sensitive"`
	Nullable   bool            `json:"nullable"`
	Ephemeral  bool            `json:"ephemeral"`
	Deprecated string          `json:"deprecated"`
	// Const is the const argument: the value must be known when the
	// configuration is loaded (it may be used in module sources).
	Const       bool   `json:"const"`
	Description string `json:"description"`
	// Validations are the validation blocks' error messages: the text
	// of a literal message, the source of a template.
	Validations []string `json:"validations"`
	Pos         Pos      `json:"pos"`
}

// Output is an output block.
type Output struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Sensitive   bool   `json:"sensitive"`
	Ephemeral   bool   `json:"ephemeral"`
	Deprecated  string `json:"deprecated"`
	Pos         Pos    `json:"pos"`
}

// ProviderRequirement is a provider the module requires: a
// required_providers entry, or one a provider block or resource implies.
type ProviderRequirement struct {
	// Name is the local name.
	Name string `json:"name"`
	// Source is the source address as written ("" when none is given).
	Source string `json:"source"`
	// Address is the source address in full (registry.opentofu.org/
	// hashicorp/aws), the implied hashicorp/<name> without a source;
	// "" when the source is not a valid address.
	Address string `json:"address"`
	// VersionConstraints are the version constraints as written.
	VersionConstraints []string `json:"version_constraints"`
	// Implied is true for a provider without a required_providers
	// entry, implied by a provider block or a resource type.
	Implied bool `json:"implied"`
	Pos     Pos  `json:"pos"`
}

// ModuleCall is a module block.
type ModuleCall struct {
	Name string `json:"name"`
	// Source and Version as written ("" when absent; the expression's
	// source text when it is not a string).
	Source  string `json:"source"`
	Version string `json:"version"`
	Pos     Pos    `json:"pos"`
}

// Resource is a resource, data or ephemeral block.
type Resource struct {
	// Address is type.name, data.type.name or ephemeral.type.name.
	Address string `json:"address"`
	// Mode is "managed", "data" or "ephemeral".
	Mode string `json:"mode"`
	Type string `json:"type"`
	Name string `json:"name"`
	// Provider is the provider's local name: the provider argument's,
	// or the one the type implies (aws_instance → aws).
	Provider string `json:"provider"`
	Pos      Pos    `json:"pos"`
}

// Pos is a place in a file of the package.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

// Diagnostic is a problem met while reading: an error (what it concerns
// could not be read, or only in part) or a warning.
type Diagnostic struct {
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
	Detail   string `json:"detail,omitempty"`
	Pos      *Pos   `json:"pos,omitempty"`
}

// Diagnostic severities.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// HasErrors reports whether any diagnostic of the package or its modules
// is an error.
func (p *Package) HasErrors() bool {
	all := [][]Diagnostic{p.Diagnostics, p.Root.Diagnostics}
	for _, m := range append(p.Submodules, p.Examples...) {
		all = append(all, m.Diagnostics)
	}
	for _, ds := range all {
		for _, d := range ds {
			if d.Severity == SeverityError {
				return true
			}
		}
	}
	return false
}

// modules are the package's modules: root, submodules, examples.
func (p *Package) modules() []*Module {
	out := []*Module{&p.Root}
	for i := range p.Submodules {
		out = append(out, &p.Submodules[i])
	}
	for i := range p.Examples {
		out = append(out, &p.Examples[i])
	}
	return out
}
