// Package notation checks Notary Project signatures of a root (what
// `notation sign` and notation-go write: a referrer of artifact type
// application/vnd.cncf.notary.signature holding a JWS or COSE envelope)
// with notation-go's verifier, under a trust store and trust policy laid
// out as in notation's configuration directory. It implements
// attest.Checker; only the command wires it in, so a build can leave it
// out (docs/artifacts.md, "Referrers: cosign v3 bundles, Notation").
package notation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/notaryproject/notation-core-go/signature"
	"github.com/notaryproject/notation-go"
	"github.com/notaryproject/notation-go/dir"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"github.com/notaryproject/notation-go/verifier/truststore"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// Policy files looked for in a configuration directory, in order:
// notation 1.2 and later write trustpolicy.oci.json, earlier ones
// trustpolicy.json.
var policyFiles = []string{"trustpolicy.oci.json", "trustpolicy.json"}

// Trust verifies Notary Project signatures with one configuration
// directory's trust store (truststore/x509/{ca,signingAuthority,tsa}/NAME)
// and trust policy.
type Trust struct {
	dir      string
	verifier notation.Verifier
}

// Load reads the trust policy under configDir (checked as notation
// checks it) and opens its trust store.
func Load(configDir string) (*Trust, error) {
	doc, err := readPolicy(configDir)
	if err != nil {
		return nil, err
	}
	store := truststore.NewX509TrustStore(dir.NewSysFS(configDir))
	v, err := verifier.New(doc, store, nil)
	if err != nil {
		return nil, fmt.Errorf("notation trust policy in %s: %w", configDir, err)
	}
	return &Trust{dir: configDir, verifier: v}, nil
}

// readPolicy reads and validates the first policy file present.
func readPolicy(configDir string) (*trustpolicy.Document, error) {
	for _, name := range policyFiles {
		path := filepath.Join(configDir, name)
		b, err := localfile.ReadBounded(path, oci.MaxSmallFile)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var doc trustpolicy.Document
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if err := doc.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return &doc, nil
	}
	return nil, fmt.Errorf("%s holds no notation trust policy (%s)", configDir, strings.Join(policyFiles, " or "))
}

// Name names the requirement.
func (t *Trust) Name() string { return "notation trust policy " + t.dir }

// Check reads subject's Notary Project signatures (bounded, see
// attach.ReadReferrers) and verifies them in turn until one passes the
// trust policy that applies to repository; refusal says why none did.
// A signature is of subject whatever its predicate type.
func (t *Trust) Check(ctx context.Context, repo oci.ReadOnlyRepository, repository string, subject digest.Digest, _ string) (refusal, err error) {
	sigs, err := attach.ReadReferrers(ctx, repo, subject, attach.ArtifactTypeNotationSignature)
	if err != nil {
		if oci.IsContentProblem(err) {
			return fmt.Errorf("notation signatures of %s cannot be read intact (%s)", subject, oci.Classify(err)), nil
		}
		return nil, err
	}
	ref := artifactReference(repository, subject)
	why := fmt.Errorf("no notation signature of %s", subject)
	for _, r := range sigs.Items {
		err := t.verify(ctx, r, ref, subject)
		if err == nil {
			return nil, nil
		}
		why = err
	}
	if sigs.Truncated {
		why = fmt.Errorf("%w (more than %d signatures refer to %s: the first %d were read)", why, attach.MaxReferrers, subject, attach.MaxReferrers)
	}
	return fmt.Errorf("notation: %w", why), nil
}

// verify checks one signature referrer: its one layer is the envelope.
// The descriptor verified against is the one the signature names, once
// its digest is found to be subject's (the proxy knows roots by digest).
func (t *Trust) verify(ctx context.Context, r attach.Referrer, ref string, subject digest.Digest) error {
	if r.Err != nil {
		return r.Err
	}
	if len(r.Layers) != 1 {
		return fmt.Errorf("signature %s has %d layers, not 1", r.Descriptor.Digest, len(r.Layers))
	}
	l := r.Layers[0]
	target, err := signedTarget(l.MediaType, l.Payload)
	if err != nil {
		return fmt.Errorf("signature %s: %w", r.Descriptor.Digest, err)
	}
	if target.Digest != subject {
		return fmt.Errorf("signature %s is of %s, not %s", r.Descriptor.Digest, target.Digest, subject)
	}
	_, err = t.verifier.Verify(ctx, target, l.Payload, notation.VerifierVerifyOptions{ArtifactReference: ref, SignatureMediaType: l.MediaType})
	if err != nil {
		return fmt.Errorf("signature %s: %w", r.Descriptor.Digest, err)
	}
	return nil
}

// signedTarget is the descriptor an envelope's payload names (read
// before the envelope is verified, to learn what to verify it against).
func signedTarget(mediaType string, envelope []byte) (ocispec.Descriptor, error) {
	env, err := signature.ParseEnvelope(mediaType, envelope)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	content, err := env.Content()
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	var p struct {
		TargetArtifact ocispec.Descriptor `json:"targetArtifact"`
	}
	if err := json.Unmarshal(content.Payload.Content, &p); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("payload: %w", err)
	}
	return p.TargetArtifact, nil
}

// artifactReference is how a trust policy's registryScopes see a root:
// host/path@digest; an OCI layout as local/<directory name>@digest (the
// directory name lower-cased, other characters than [a-z0-9._-] as -),
// as notation's own --oci-layout verification wants a scope given.
func artifactReference(repository string, subject digest.Digest) string {
	if path, ok := strings.CutPrefix(repository, oci.LayoutPrefix); ok {
		name := strings.Trim(unsafe.ReplaceAllString(strings.ToLower(filepath.Base(path)), "-"), "-._")
		if name == "" {
			name = "layout"
		}
		repository = "local/" + name
	}
	return repository + "@" + subject.String()
}

var unsafe = regexp.MustCompile(`[^a-z0-9._-]+`)
