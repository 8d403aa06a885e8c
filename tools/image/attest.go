package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// SLSAProvenancePredicateType is the predicate type of the image's build
// provenance: `cosign verify-attestation --type slsaprovenance1` asks for it.
const SLSAProvenancePredicateType = "https://slsa.dev/provenance/v1"

// imageBuildType names how tools/image builds (the SLSA buildType).
const imageBuildType = "https://github.com/oci-tofu/oci-tofu/tools/image@v1"

// slsaProvenance is a SLSA provenance v1 predicate
// (https://slsa.dev/spec/v1.0/provenance): what was built from what.
type slsaProvenance struct {
	BuildDefinition struct {
		BuildType            string           `json:"buildType"`
		ExternalParameters   map[string]any   `json:"externalParameters"`
		InternalParameters   map[string]any   `json:"internalParameters,omitempty"`
		ResolvedDependencies []slsaDescriptor `json:"resolvedDependencies,omitempty"`
	} `json:"buildDefinition"`
	RunDetails struct {
		Builder struct {
			ID string `json:"id"`
		} `json:"builder"`
		Metadata struct {
			StartedOn string `json:"startedOn,omitempty"`
		} `json:"metadata"`
	} `json:"runDetails"`
}

type slsaDescriptor struct {
	URI    string            `json:"uri"`
	Digest map[string]string `json:"digest,omitempty"`
}

// provenance says how the image was built: the inputs the build reads
// (version, revision, platforms, the build time), the Go release, and the
// source revision it was built from.
func provenance(o options, build *debug.BuildInfo) slsaProvenance {
	var p slsaProvenance
	d := &p.BuildDefinition
	d.BuildType = imageBuildType
	platforms := make([]string, len(o.Platforms))
	for i, pl := range o.Platforms {
		platforms[i] = pl.String()
	}
	d.ExternalParameters = map[string]any{
		"version": o.Meta.Version, "revision": o.Meta.Revision, "source": o.Meta.Source,
		"platforms": platforms, "source_date_epoch": o.Meta.Created.Unix(), "tag": o.Tag,
	}
	if build != nil {
		d.InternalParameters = map[string]any{"go": build.GoVersion}
	}
	if o.Meta.Revision != "" {
		d.ResolvedDependencies = []slsaDescriptor{{URI: "git+" + o.Meta.Source, Digest: map[string]string{"gitCommit": o.Meta.Revision}}}
	}
	p.RunDetails.Builder.ID = imageBuildType
	return p
}

// attestPushed signs the pushed image index (ref names it) with the key
// --attest-key names and attaches two attestations, as `oci-tofu push
// --attest-key` does for releases (cosign's tag schema: sha256-<hex>.sig
// and .att): the SLSA build provenance and an SPDX SBOM of the Go modules
// in the binary.
func attestPushed(ctx context.Context, o options, ref oci.Reference, index digest.Digest, build *debug.BuildInfo) error {
	signer, err := attest.LoadSigner(o.AttestKey, []byte(os.Getenv("COSIGN_PASSWORD")))
	if err != nil {
		return fmt.Errorf("--attest-key: %w", err)
	}
	sbom, err := spdxSBOM(sbomInput{Image: index, Name: ref.Name(), Build: build, Created: o.Meta.Created})
	if err != nil {
		return err
	}
	client, err := oci.NewClient(oci.Options{PlainHTTP: o.PlainHTTP, UserAgent: "oci-tofu-image-tool"})
	if err != nil {
		return err
	}
	repo, err := client.Open(ref)
	if err != nil {
		return err
	}
	for _, a := range []struct {
		predicateType string
		predicate     any
	}{{SLSAProvenancePredicateType, provenance(o, build)}, {SPDXPredicateType, sbom}} {
		at, err := attest.Attach(ctx, repo, ref.Name(), index, signer, a.predicateType, a.predicate)
		if err != nil {
			return fmt.Errorf("%s@%s was pushed, but attesting it (%s) failed: %w", ref.Name(), index, a.predicateType, err)
		}
		fmt.Printf("attested %s (%s): %s\n", index, a.predicateType, at.AttestationTag)
	}
	fmt.Printf("signed %s: %s\n", index, attach.AttachmentTag(index, attach.CosignSignatures))
	return nil
}
