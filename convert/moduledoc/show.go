package moduledoc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Shown is a module package's interface as `oci-tofu show` prints it.
type Shown struct {
	// Ref names the package (its tag, or its digest).
	Ref      oci.Reference
	Manifest ocispec.Descriptor
	Doc      *Doc
	// Extracted says why the interface was extracted from the zip now
	// rather than read as stored: "" when it was read.
	Extracted string
}

// Show reads the interface of the module package ref names in repo (its
// tag, default latest as OpenTofu's, or its digest): the stored one
// (Read), or, when none is stored or none can be read, the one extracted
// now from its zip (downloaded into a temporary file, at most
// modulepkg.MaxSize, its size and digest verified). A provider or an
// OpenTofu release is refused, saying so.
func Show(ctx context.Context, repo oci.ReadOnlyRepository, ref oci.Reference) (*Shown, error) {
	if ref.Reference == "" {
		ref.Reference = "latest"
	}
	manifest, b, err := oci.FetchReference(ctx, repo, ref.Reference)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", ref, err)
	}
	if err := notAModule(ref, b); err != nil {
		return nil, err
	}
	zip, err := oci.ParseModule(manifest, b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	s := &Shown{Ref: ref, Manifest: manifest}
	s.Doc, err = Read(ctx, repo, manifest.Digest)
	switch {
	case errors.Is(err, ErrNoDoc):
		s.Extracted = "no stored interface"
	case errors.Is(err, ErrBadDoc):
		s.Extracted = err.Error()
	case err != nil:
		return nil, fmt.Errorf("%s: reading its interface: %w", ref, err)
	default:
		return s, nil
	}
	if s.Doc, err = fetchAndExtract(ctx, repo, ref, zip); err != nil {
		return nil, err
	}
	return s, nil
}

// notAModule says what ref holds when it is a provider or an OpenTofu
// release (the manifest b tells), nil otherwise.
func notAModule(ref oci.Reference, b []byte) error {
	var head struct {
		ArtifactType string `json:"artifactType"`
	}
	_ = json.Unmarshal(b, &head)
	switch head.ArtifactType {
	case oci.ArtifactTypeProvider:
		return fmt.Errorf("show: %s holds a provider release; show reads module packages", ref)
	case oci.ArtifactTypeTofuRelease:
		return fmt.Errorf("show: %s holds an OpenTofu release; show reads module packages", ref)
	}
	return nil
}

// fetchAndExtract downloads the package's zip into a temporary file,
// verified, and extracts its interface.
func fetchAndExtract(ctx context.Context, repo oci.ReadOnlyRepository, ref oci.Reference, zip ocispec.Descriptor) (*Doc, error) {
	tmp, err := os.CreateTemp("", "oci-tofu-show-*.zip")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := oci.FetchBlob(ctx, repo, zip, modulepkg.MaxSize, tmp); err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	d, err := FromZip(ctx, tmp, zip.Size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	return d, nil
}

// Report prints s: the Doc as JSON with rep.JSON, else for people, the
// package named first and whether its interface was extracted now.
func (s *Shown) Report(rep *report.Reporter) error {
	var human strings.Builder
	fmt.Fprintf(&human, "Module package %s (%s)\n", s.Ref, s.Manifest.Digest)
	if s.Extracted != "" {
		fmt.Fprintf(&human, "(extracted now: %s)\n", s.Extracted)
	}
	human.WriteString("\n")
	if err := s.Doc.Print(&human); err != nil {
		return err
	}
	return rep.Result(s.Doc, strings.TrimSuffix(human.String(), "\n"))
}
