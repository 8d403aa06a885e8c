package tfconfig

import (
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// ConfigError is a configuration the client would refuse: its diagnostics,
// printed as tofu prints them (summary, position, source line, detail).
// errors.As finds the hcl.Diagnostics through Unwrap.
type ConfigError struct {
	Diags hcl.Diagnostics
	files map[string]*hcl.File
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	w := hcl.NewDiagnosticTextWriter(&b, e.files, 0, false)
	for i, d := range e.Diags {
		if i > 0 {
			b.WriteString("\n")
		}
		w.WriteDiagnostic(d)
	}
	return strings.TrimRight(b.String(), "\n")
}

// Unwrap returns the diagnostics.
func (e *ConfigError) Unwrap() error { return e.Diags }

// configError keeps the errors of diags, with the parsed files for their
// source lines.
func configError(diags hcl.Diagnostics, files map[string]*hcl.File) error {
	var errs hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs = append(errs, d)
		}
	}
	return &ConfigError{Diags: errs, files: files}
}
