// Package moduledoc extracts a module package's interface, what a
// registry's module page shows: the inputs a module takes (type as
// written, default, required, sensitive, nullable, ephemeral, deprecated,
// const, description, validation messages), the outputs it gives, what it depends
// on (required providers, module calls), the resources and data sources it
// declares, and the same for each submodule (modules/*) and example
// (examples/*), with the README's path.
//
// It reads configurations as OpenTofu's internal/configs does (the same
// hcl/v2 and cty decoding, file selection and override merging) without
// evaluating anything, and is bounded: a file that does not parse or
// breaks a limit becomes a diagnostic in the result, never a failure of
// the whole, and the limits below hold whatever the package holds.
package moduledoc

// Limits of one extraction (docs/catalogue.md).
const (
	// MaxFileSize bounds one configuration file; a larger one is not read.
	MaxFileSize = 4 << 20
	// MaxTotalSize bounds the configuration bytes read from one package.
	MaxTotalSize = 32 << 20
	// MaxFiles bounds the configuration files read from one package.
	MaxFiles = 2000
	// MaxModules bounds the submodules and the examples listed (each).
	MaxModules = 200
	// MaxBlocks bounds the blocks (variables, outputs, resources, module
	// calls, …, with their nested validation blocks) decoded per module;
	// the rest are left out, with a diagnostic.
	MaxBlocks = 4096
	// MaxNesting bounds the bracket nesting of a configuration file
	// (brackets in strings and comments counted too), checked before
	// parsing, which recurses once per level: a deeper file is not
	// parsed.
	MaxNesting = 512
	// MaxTypeDepth bounds the nesting of a type constraint.
	MaxTypeDepth = 32
	// MaxDefaultSize bounds a default value's JSON; a larger one is
	// left out, with a diagnostic.
	MaxDefaultSize = 64 << 10
	// MaxDiagnostics bounds the diagnostics kept per module.
	MaxDiagnostics = 100
)
