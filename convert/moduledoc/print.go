package moduledoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode"
)

// Print writes d for people: each module (the root, each submodule, each
// example) with its inputs (name, type, default, required, description),
// outputs, providers, module calls, resources and diagnostics, then the
// package's diagnostics. What the package wrote is printed on one line,
// its control characters replaced, long values cut.
func (d *Doc) Print(w io.Writer) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	p := &d.Package
	for i, m := range p.modules() {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		printModule(tw, moduleTitle(p, i, m), m)
	}
	if len(p.Diagnostics) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "Package diagnostics:")
		printDiagnostics(tw, p.Diagnostics)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(buf.String()) { // a table's empty last cells leave spaces
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// moduleTitle names the i-th of p's modules (p.modules()).
func moduleTitle(p *Package, i int, m *Module) string {
	title := "Root module"
	switch {
	case i > len(p.Submodules):
		title = "Example " + clean(m.Path, 0)
	case i > 0:
		title = "Submodule " + clean(m.Path, 0)
	}
	if m.README != "" {
		title += " (" + clean(m.README, 0) + ")"
	}
	return title
}

// The longest a cell is printed.
const (
	maxType        = 60
	maxDefault     = 40
	maxDescription = 80
)

func printModule(w io.Writer, title string, m *Module) {
	fmt.Fprintln(w, title)
	section(w, "Inputs", len(m.Inputs), "NAME\tTYPE\tDEFAULT\tREQUIRED\tDESCRIPTION", func() {
		for _, in := range m.Inputs {
			fmt.Fprintf(w, "    %s\t%s\t%s\t%s\t%s\n", clean(in.Name, 0), inputType(in), inputDefault(in), yesNo(in.Required), clean(in.Description, maxDescription))
		}
	})
	section(w, "Outputs", len(m.Outputs), "NAME\tDESCRIPTION", func() {
		for _, o := range m.Outputs {
			fmt.Fprintf(w, "    %s\t%s\n", clean(o.Name, 0)+flags(o.Sensitive, o.Ephemeral), clean(o.Description, maxDescription))
		}
	})
	section(w, "Providers", len(m.RequiredProviders), "NAME\tSOURCE\tVERSION", func() {
		for _, r := range m.RequiredProviders {
			source := r.Address
			if source == "" {
				source = r.Source
			}
			fmt.Fprintf(w, "    %s\t%s\t%s\n", clean(r.Name, 0), clean(source, 0), clean(strings.Join(r.VersionConstraints, ", "), maxType))
		}
	})
	section(w, "Module calls", len(m.ModuleCalls), "NAME\tSOURCE\tVERSION", func() {
		for _, c := range m.ModuleCalls {
			fmt.Fprintf(w, "    %s\t%s\t%s\n", clean(c.Name, 0), clean(c.Source, 0), clean(c.Version, maxType))
		}
	})
	section(w, "Resources", len(m.Resources), "ADDRESS\tPROVIDER", func() {
		for _, r := range m.Resources {
			fmt.Fprintf(w, "    %s\t%s\n", clean(r.Address, 0), clean(r.Provider, 0))
		}
	})
	if len(m.RequiredCore) > 0 {
		fmt.Fprintf(w, "  Requires OpenTofu %s\n", clean(strings.Join(m.RequiredCore, ", "), maxType))
	}
	if len(m.Diagnostics) > 0 {
		fmt.Fprintln(w, "  Diagnostics:")
		printDiagnostics(w, m.Diagnostics)
	}
}

// section prints a titled table of n rows; none: "none" for the inputs
// and outputs, nothing for the rest.
func section(w io.Writer, title string, n int, header string, rows func()) {
	if n == 0 {
		if title == "Inputs" || title == "Outputs" {
			fmt.Fprintf(w, "  %s: none\n", title)
		}
		return
	}
	fmt.Fprintf(w, "  %s (%d):\n    %s\n", title, n, header)
	rows()
}

func printDiagnostics(w io.Writer, ds []Diagnostic) {
	for _, d := range ds {
		line := clean(d.Severity, 0) + ": " + clean(d.Summary, 0)
		if d.Detail != "" {
			line += ": " + clean(d.Detail, 0)
		}
		if d.Pos != nil && d.Pos.File != "" {
			line += fmt.Sprintf(" (%s:%d)", clean(d.Pos.File, 0), d.Pos.Line)
		}
		fmt.Fprintln(w, "    "+line)
	}
}

func inputType(in Input) string {
	if in.Type == "" {
		return "any"
	}
	return clean(in.Type, maxType)
}

// inputDefault is the default as JSON, "-" for a required input, "(not
// shown)" for one too large to keep.
func inputDefault(in Input) string {
	switch {
	case in.Required:
		return "-"
	case len(in.Default) == 0:
		return "(not shown)"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, in.Default) != nil {
		return clean(string(in.Default), maxDefault)
	}
	return clean(buf.String(), maxDefault)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// flags marks a sensitive or ephemeral output.
func flags(sensitive, ephemeral bool) string {
	var out []string
	if sensitive {
		out = append(out, "sensitive")
	}
	if ephemeral {
		out = append(out, "ephemeral")
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, ", ") + ")"
}

// clean is s on one line: control and format characters (escape
// sequences, bidirectional overrides) and runs of white space as one
// space, tabs too (they would break the table), cut after max runes
// (0: not cut) with "…".
func clean(s string, max int) string {
	var b strings.Builder
	space, n := false, 0
	for _, r := range strings.TrimSpace(s) {
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
			n++
		}
		space = false
		if max > 0 && n >= max {
			b.WriteString("…")
			return b.String()
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
