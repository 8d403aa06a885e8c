package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/oci"
)

// ModuleDocs reads the interfaces of stored module packages for the
// catalogue: the one stored beside the package (moduledoc.Read), or, for
// a package another tool pushed, one extracted from its zip on first
// view; either is kept with the store's other reads per manifest
// (store.Repo.Described), so a warm view reads nothing.
type ModuleDocs struct {
	// TempDir holds the zips extracted on first view (default
	// os.TempDir()).
	TempDir string
	// MaxZip bounds a zip extracted on first view (default
	// DefaultMaxDocZip); a larger package is shown without its
	// interface, saying why.
	MaxZip int64
	// Extracting bounds the extractions made at once (default 2): a
	// flood of first views waits for them rather than filling the disk.
	Extracting chan struct{}
}

// DefaultMaxDocZip is ModuleDocs.MaxZip's default.
const DefaultMaxDocZip = 64 << 20

// ModuleDoc is a module package's interface, and whether it was
// extracted now (no interface is stored beside the package).
type ModuleDoc struct {
	Doc       *moduledoc.Doc
	Extracted bool
}

// NewModuleDocs is ModuleDocs with its defaults.
func NewModuleDocs(tempDir string) *ModuleDocs {
	return &ModuleDocs{TempDir: tempDir, MaxZip: DefaultMaxDocZip, Extracting: make(chan struct{}, 2)}
}

// Read is the interface of the module package whose manifest is root.
func (d *ModuleDocs) Read(ctx context.Context, root Root) (ModuleDoc, error) {
	v, err := root.Repo.Described(ctx, "the module's interface", root.Digest, func(ctx context.Context, repo oci.ReadOnlyRepository, _ string) (any, int64, error) {
		doc, err := moduledoc.Read(ctx, repo, root.Digest)
		extracted := false
		if errors.Is(err, moduledoc.ErrNoDoc) || errors.Is(err, moduledoc.ErrBadDoc) {
			doc, err = d.extract(ctx, repo, root)
			extracted = true
		}
		if err != nil {
			return nil, 0, err
		}
		b, err := doc.Marshal()
		if err != nil {
			return nil, 0, err
		}
		return ModuleDoc{Doc: doc, Extracted: extracted}, int64(2*len(b) + 256), nil
	})
	if err != nil {
		return ModuleDoc{}, err
	}
	md, _ := v.(ModuleDoc)
	return md, nil
}

// SearchModule is what a catalogue search reads of the package whose
// manifest is root: its root module's input and output names, types and
// descriptions, provider requirements, resources and module calls
// (searched), nothing else (no defaults, validations, positions,
// submodules or READMEs). It is kept in a cache of its own
// (store.Repo.Summarised), about 1–2 KiB a module, so a warm search
// over thousands of modules reads nothing however many pages were
// viewed since; what the search makes of it (Searched.Made) is kept
// with it.
func (d *ModuleDocs) SearchModule(ctx context.Context, root Root) (*Searched, error) {
	v, err := root.Repo.Summarised(ctx, "the module's searched interface", root.Digest, func(ctx context.Context, _ oci.ReadOnlyRepository, _ string) (any, int64, error) {
		md, err := d.Read(ctx, root)
		if err != nil {
			return nil, 0, err
		}
		m := searched(&md.Doc.Package.Root)
		return &Searched{module: m}, searchedSize(m), nil // what Made makes of it holds the same texts
	})
	if err != nil {
		return nil, err
	}
	s, _ := v.(*Searched)
	if s == nil {
		return nil, errors.New("no interface of the module to search")
	}
	return s, nil
}

// Searched is what a search reads of a module package's root module,
// shared by every search while it is cached.
type Searched struct {
	once   sync.Once
	module *moduledoc.Module // nil once made
	made   any
}

// Made is what build makes of the module (a search's prepared text),
// made by the first caller and kept in its place: later searches of an
// unchanged package redo none of it. Every caller must pass the same
// build, which must not keep the module itself.
func (s *Searched) Made(build func(*moduledoc.Module) any) any {
	s.once.Do(func() { s.made, s.module = build(s.module), nil })
	return s.made
}

// searched is what a search reads of m.
func searched(m *moduledoc.Module) *moduledoc.Module {
	out := &moduledoc.Module{Path: m.Path, RequiredProviders: m.RequiredProviders, Resources: m.Resources, ModuleCalls: m.ModuleCalls}
	for _, in := range m.Inputs {
		out.Inputs = append(out.Inputs, moduledoc.Input{Name: in.Name, Type: in.Type, Description: in.Description, Required: in.Required})
	}
	for _, o := range m.Outputs {
		out.Outputs = append(out.Outputs, moduledoc.Output{Name: o.Name, Description: o.Description})
	}
	return out
}

// searchedSize is about what m holds in memory: its texts and a few
// words of headers for each.
func searchedSize(m *moduledoc.Module) int64 {
	const each = 64
	n := int64(256 + len(m.Path))
	for _, in := range m.Inputs {
		n += each + int64(len(in.Name)+len(in.Type)+len(in.Description))
	}
	for _, o := range m.Outputs {
		n += each + int64(len(o.Name)+len(o.Description))
	}
	for _, p := range m.RequiredProviders {
		n += each + int64(len(p.Name)+len(p.Source)+len(p.Address)+len(p.Pos.File))
		for _, c := range p.VersionConstraints {
			n += 16 + int64(len(c))
		}
	}
	for _, r := range m.Resources {
		n += each + int64(len(r.Address)+len(r.Mode)+len(r.Type)+len(r.Name)+len(r.Provider)+len(r.Pos.File))
	}
	for _, c := range m.ModuleCalls {
		n += each + int64(len(c.Name)+len(c.Source)+len(c.Version)+len(c.Pos.File))
	}
	return n
}

// extract reads the interface from the package's zip, fetched (verified)
// into a temporary file; a zip that cannot be read is an interface
// saying why (unread), kept as any other.
func (d *ModuleDocs) extract(ctx context.Context, repo oci.ReadOnlyRepository, root Root) (*moduledoc.Doc, error) {
	_, zip, err := oci.ResolveModule(ctx, repo, root.Digest.String())
	if err != nil {
		return nil, err
	}
	if zip.Size > d.MaxZip {
		return unread(fmt.Sprintf("the package is %d bytes, more than the %d the catalogue reads on view: push it with oci-tofu push module to store its interface", zip.Size, d.MaxZip)), nil
	}
	select {
	case d.Extracting <- struct{}{}:
		defer func() { <-d.Extracting }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	f, err := os.CreateTemp(d.TempDir, "oci-tofu-moduledoc-*.zip")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := oci.FetchBlob(ctx, repo, zip, d.MaxZip, f); err != nil {
		return nil, err
	}
	doc, err := moduledoc.FromZip(ctx, f, zip.Size)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		// The package's fault, not the registry's: one package pushed
		// by another tool must not fail every search that reads it.
		return unread(fmt.Sprintf("the package %s cannot be read: %v", root.Digest, err)), nil
	}
	return doc, nil
}

// unread is the interface of a package that was not read: nothing but
// why.
func unread(why string) *moduledoc.Doc {
	return &moduledoc.Doc{Format: moduledoc.Format, Package: moduledoc.Package{
		Diagnostics: []moduledoc.Diagnostic{{Severity: moduledoc.SeverityError, Summary: "the interface was not read", Detail: why}}}}
}
