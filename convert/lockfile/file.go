// Package lockfile reads and writes dependency lock files
// (.terraform.lock.hcl) exactly as OpenTofu does, and locks a
// configuration's providers from registry metadata (Lock).
package lockfile

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/zclconf/go-cty/cty"
)

// Provider is one provider block of a .terraform.lock.hcl file.
type Provider struct {
	Address     string   `hcl:"address,label" json:"address"`
	Version     string   `hcl:"version" json:"version"`
	Constraints string   `hcl:"constraints,optional" json:"constraints,omitempty"`
	Hashes      []string `hcl:"hashes,optional" json:"hashes"`
	// Deprecated is the policy's message when it deprecates the version
	// locked (Options.Policy): what the client is warned of, not a part
	// of the lock file.
	Deprecated string `json:"deprecated,omitempty"`
}

// File is the provider part of a dependency lock file.
type File struct {
	Providers []Provider `hcl:"provider,block"`
	Remain    hcl.Body   `hcl:",remain"`
	// Client is the CLI the file is written for: its name appears in the
	// header comment ("maintained automatically by \"tofu init\""). The
	// zero value is tofu.
	Client tfconfig.Client
}

// Read parses a .terraform.lock.hcl file.
func Read(path string) (*File, error) {
	src, err := localfile.ReadBounded(path, oci.MaxLockFile)
	if err != nil {
		return nil, err
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, fmt.Errorf("parsing %s: %s", path, diags.Error())
	}
	var lf File
	if diags := gohcl.DecodeBody(f.Body, nil, &lf); diags.HasErrors() {
		return nil, fmt.Errorf("reading %s: %s", path, diags.Error())
	}
	sort.Slice(lf.Providers, func(i, j int) bool { return lf.Providers[i].Address < lf.Providers[j].Address })
	return &lf, nil
}

// ReadExisting reads the lock file at path as Read does; nil when there
// is none.
func ReadExisting(path string) (*File, error) {
	f, err := Read(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return f, nil
}

// ProviderSpecs are the providers the file locks, any version.
func (lf *File) ProviderSpecs() ([]names.ProviderSpec, error) {
	var specs []names.ProviderSpec
	for _, p := range lf.Providers {
		a, err := names.ParseProvider(p.Address)
		if err != nil {
			return nil, err
		}
		specs = append(specs, names.ProviderSpec{Provider: a})
	}
	return specs, nil
}

// Provider returns the entry for a provider address, or nil.
func (lf *File) Provider(address string) *Provider {
	for i := range lf.Providers {
		if lf.Providers[i].Address == address {
			return &lf.Providers[i]
		}
	}
	return nil
}

// Bytes renders the lock file exactly as the client writes it (header
// comment naming it, providers sorted by hostname, namespace and type, one
// hash per line, sorted), so its init finds nothing to rewrite.
func (lf *File) Bytes() []byte {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	body.AppendUnstructuredTokens(hclwrite.Tokens{
		{Type: hclsyntax.TokenComment, Bytes: []byte("# This file is maintained automatically by \"" + lf.Client.Command() + " init\".\n")},
		{Type: hclsyntax.TokenComment, Bytes: []byte("# Manual edits may be lost in future updates.\n")},
	})
	providers := append([]Provider(nil), lf.Providers...)
	sort.Slice(providers, func(i, j int) bool { return lessAddress(providers[i].Address, providers[j].Address) })
	for _, p := range providers {
		body.AppendNewline()
		p.appendBlock(body)
	}
	return f.Bytes()
}

// Bytes is p's provider block alone, exactly as File.Bytes writes it.
func (p Provider) Bytes() []byte {
	f := hclwrite.NewEmptyFile()
	p.appendBlock(f.Body())
	return f.Bytes()
}

// appendBlock appends p's provider block to body.
func (p Provider) appendBlock(body *hclwrite.Body) {
	b := body.AppendNewBlock("provider", []string{p.Address}).Body()
	b.SetAttributeValue("version", cty.StringVal(p.Version))
	if p.Constraints != "" {
		b.SetAttributeValue("constraints", cty.StringVal(p.Constraints))
	}
	if hashes := sortedUnique(p.Hashes); len(hashes) > 0 {
		toks := hclwrite.Tokens{{Type: hclsyntax.TokenOBrack, Bytes: []byte("[")}, {Type: hclsyntax.TokenNewline, Bytes: []byte("\n")}}
		for _, h := range hashes {
			toks = append(toks, hclwrite.TokensForValue(cty.StringVal(h))...)
			toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenComma, Bytes: []byte(",")}, &hclwrite.Token{Type: hclsyntax.TokenNewline, Bytes: []byte("\n")})
		}
		toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenCBrack, Bytes: []byte("]")})
		b.SetAttributeRaw("hashes", toks)
	}
}

// lessAddress orders provider addresses as the clients order lock file
// blocks (see tfconfig.LessProvider).
func lessAddress(a, b string) bool {
	pa, errA := names.ParseProvider(a)
	pb, errB := names.ParseProvider(b)
	if errA != nil || errB != nil {
		return a < b
	}
	return tfconfig.LessProvider(pa, pb)
}

// SortedUnique is hashes as Bytes writes them: sorted, each once.
func SortedUnique(hashes []string) []string { return sortedUnique(hashes) }

func sortedUnique(in []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
