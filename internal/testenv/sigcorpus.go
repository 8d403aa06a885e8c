package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Decision is what a verifier makes of a release: OpenTofu installs it
// (perhaps printing a warning) or refuses it; oci-tofu accepts it (perhaps
// with a warning) or refuses it. The words are shared so that the two can
// be compared.
type Decision string

const (
	Accepted            Decision = "accepted"
	AcceptedWithWarning Decision = "accepted with warning"
	Refused             Decision = "refused"
)

// SigCase is one provider release of the signature corpus: the release
// hello 1.0.0 for linux_amd64 (zip, manifest.json, SHA256SUMS and its
// .sig), signed with GnuPG, with one thing special about it.
type SigCase struct {
	// Name is also the provider namespace the case is published under.
	Name, About string
	// Dir holds the release files; Key is the armored public key to verify
	// them with (what the origin registry lists, what --key is given).
	Dir, Key string
	// Checksums is true for the cases that vary SHA256SUMS (signed
	// properly) rather than the key or signature.
	Checksums bool
	// Tofu is what OpenTofu 1.12 decides when installing the release from
	// its origin registry (observed with the real binary, asserted by the
	// e2e test TestSignatureCorpusAgreesWithTofu); TofuEnforced is the
	// same with OPENTOFU_ENFORCE_GPG_EXPIRATION=true.
	Tofu, TofuEnforced Decision
	// TofuUnsigned is true when OpenTofu installs the release as
	// "verified checksum" rather than "signed": it takes none of the
	// SHA256SUMS hashes as signed.
	TofuUnsigned bool
}

// Corpus file names: the release is hello 1.0.0 for linux_amd64.
const (
	CorpusType     = "hello"
	CorpusVersion  = "1.0.0"
	CorpusPlatform = "linux_amd64"
)

var (
	corpusOnce  sync.Once
	corpusDir   string
	corpusCases []SigCase
	corpusErr   error
)

// SignatureCorpus returns the corpus, generated with GnuPG once per test
// process (ed25519 keys where the case allows, so it takes about a
// second). Keys are made on 2024-01-01 and sign an hour later; the
// expiring ones expire a day after that, long before any test runs.
func SignatureCorpus(t testing.TB) []SigCase {
	t.Helper()
	corpusOnce.Do(func() {
		root := Root(t)
		corpusDir, corpusCases, corpusErr = buildCorpus(filepath.Join(root, "testdata", "providers", CorpusType, CorpusVersion))
	})
	if corpusErr != nil {
		t.Fatal(corpusErr)
	}
	return corpusCases
}

// corpusBuilder writes the cases into one directory.
type corpusBuilder struct {
	gpg      *GnuPG
	dir      string
	zip      []byte
	manifest []byte
	keys     map[string]string // key name → fingerprint of the signing (sub)key
	cases    []SigCase
}

var (
	corpusCreated = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	corpusSigned  = corpusCreated.Add(time.Hour)
)

// RemoveSignatureCorpus deletes the corpus files, if a test made them; a
// package's TestMain calls it after m.Run.
func RemoveSignatureCorpus() {
	if corpusDir != "" {
		os.RemoveAll(corpusDir)
	}
}

func buildCorpus(fixture string) (string, []SigCase, error) {
	gpg, err := newGnuPG()
	if err != nil {
		return "", nil, err
	}
	defer gpg.close()
	dir, err := os.MkdirTemp("", "oci-tofu-sigcorpus-")
	if err != nil {
		return "", nil, err
	}
	b := &corpusBuilder{gpg: gpg, dir: dir, keys: map[string]string{}}
	if err := b.build(fixture); err != nil {
		return dir, nil, err
	}
	return dir, b.cases, nil
}

// build makes the keys and every case from the fixture release's zip and
// manifest.json.
func (b *corpusBuilder) build(fixture string) error {
	var err error
	if b.zip, err = os.ReadFile(filepath.Join(fixture, corpusFile("linux_amd64.zip"))); err != nil {
		return err
	}
	if b.manifest, err = os.ReadFile(filepath.Join(fixture, corpusFile("manifest.json"))); err != nil {
		return err
	}
	if err := b.makeKeys(); err != nil {
		return err
	}
	if err := b.signatureCases(); err != nil {
		return err
	}
	return b.checksumCases()
}

func corpusFile(suffix string) string {
	return "terraform-provider-" + CorpusType + "_" + CorpusVersion + "_" + suffix
}

// makeKeys makes one key per kind of signer the corpus needs.
func (b *corpusBuilder) makeKeys() error {
	type keySpec struct{ name, algo, usage string }
	for _, k := range []keySpec{
		{"ed25519", "ed25519", "sign"},
		{"rsa", "rsa2048", "sign"},
		{"dsa", "dsa2048", "sign"},
		{"other", "ed25519", "sign"},
		{"revoked", "ed25519", "sign"},
	} {
		fpr, err := b.gpg.GenKey(k.name+" <"+k.name+"@corpus.invalid>", k.algo, k.usage, Never, corpusCreated)
		if err != nil {
			return err
		}
		b.keys[k.name] = fpr
	}
	expired, err := b.gpg.GenKey("expired <expired@corpus.invalid>", "ed25519", "sign", "1d", corpusCreated)
	if err != nil {
		return err
	}
	b.keys["expired"] = expired
	for _, s := range []struct {
		name   string
		expire Expiry
	}{{"subkey", Never}, {"expired-subkey", "1d"}} {
		primary, err := b.gpg.GenKey(s.name+" <"+s.name+"@corpus.invalid>", "ed25519", "cert", Never, corpusCreated)
		if err != nil {
			return err
		}
		sub, err := b.gpg.AddSubkey(primary, "ed25519", "sign", s.expire, corpusCreated)
		if err != nil {
			return err
		}
		b.keys[s.name] = sub
		b.keys[s.name+"-primary"] = primary
	}
	return nil
}

// keyFile exports the public key of the named signer once.
func (b *corpusBuilder) keyFile(name string) (string, error) {
	path := filepath.Join(b.dir, "keys", name+".asc")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	fpr := b.keys[name]
	if primary, ok := b.keys[name+"-primary"]; ok {
		fpr = primary
	}
	pub, err := b.gpg.ExportPublic(fpr)
	if err != nil {
		return "", err
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	return path, os.WriteFile(path, pub, 0o644)
}

// sumsLine is one SHA256SUMS line as sha256sum writes it.
func sumsLine(data []byte, name string) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:]) + "  " + name + "\n"
}

// canonicalSums is SHA256SUMS as `sha256sum terraform-provider-*` writes it.
func (b *corpusBuilder) canonicalSums() string {
	return sumsLine(b.zip, corpusFile("linux_amd64.zip")) + sumsLine(b.manifest, corpusFile("manifest.json"))
}

// release describes a case to write: SHA256SUMS, who signs it, how.
type release struct {
	name, about string
	sums        string
	signer, key string // signing key, and the key given to verifiers
	sign        SignOptions
	revoke      bool
	tofu        Decision
	enforced    Decision
	unsigned    bool
	checksums   bool
}

// write writes a case's release directory and adds it to the corpus.
func (b *corpusBuilder) write(r release) error {
	if r.sign.At.IsZero() {
		r.sign.At = corpusSigned
	}
	if r.key == "" {
		r.key = r.signer
	}
	if r.enforced == "" {
		r.enforced = r.tofu
	}
	dir := filepath.Join(b.dir, r.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sig, err := b.gpg.DetachSign(b.keys[r.signer], []byte(r.sums), r.sign)
	if err != nil {
		return err
	}
	if r.revoke {
		fpr := b.keys[r.signer]
		if err := b.gpg.Revoke(fpr); err != nil {
			return err
		}
	}
	key, err := b.keyFile(r.key)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		corpusFile("linux_amd64.zip"): b.zip,
		corpusFile("manifest.json"):   b.manifest,
		corpusFile("SHA256SUMS"):      []byte(r.sums),
		corpusFile("SHA256SUMS.sig"):  sig,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	b.cases = append(b.cases, SigCase{Name: r.name, About: r.about, Dir: dir, Key: key, Checksums: r.checksums,
		Tofu: r.tofu, TofuEnforced: r.enforced, TofuUnsigned: r.unsigned})
	return nil
}

// signatureCases vary the key and the signature over a canonical SHA256SUMS.
func (b *corpusBuilder) signatureCases() error {
	sums := b.canonicalSums()
	for _, r := range []release{
		{name: "good-ed25519", about: "baseline: ed25519 key, binary signature", signer: "ed25519", tofu: Accepted},
		{name: "rsa", about: "RSA 2048 key", signer: "rsa", tofu: Accepted},
		{name: "dsa", about: "DSA 2048 key", signer: "dsa", tofu: Accepted},
		{name: "signing-subkey", about: "certify-only primary key, signed by its signing subkey", signer: "subkey", tofu: Accepted},
		{name: "expired-key", about: "signed while valid by a key that expired since", signer: "expired", tofu: AcceptedWithWarning, enforced: Refused},
		{name: "expired-subkey", about: "signed while valid by a subkey that expired since", signer: "expired-subkey", tofu: AcceptedWithWarning, enforced: Refused},
		{name: "expired-signature", about: "a signature with an expiry date, now past", signer: "ed25519", sign: SignOptions{Expire: "1d"}, tofu: AcceptedWithWarning, enforced: Refused},
		{name: "revoked-key", about: "signed by a key revoked since", signer: "revoked", revoke: true, tofu: Refused},
		{name: "armored-signature", about: "ASCII-armored .sig", signer: "ed25519", sign: SignOptions{Armor: true}, tofu: Refused},
		{name: "wrong-key", about: "signed by another key than the one given", signer: "other", key: "ed25519", tofu: Refused},
	} {
		r.sums = sums
		if err := b.write(r); err != nil {
			return fmt.Errorf("corpus case %s: %w", r.name, err)
		}
	}
	return nil
}

// checksumCases vary SHA256SUMS, each signed properly by the ed25519 key.
func (b *corpusBuilder) checksumCases() error {
	zipName, manifestName := corpusFile("linux_amd64.zip"), corpusFile("manifest.json")
	zipLine, manifestLine := sumsLine(b.zip, zipName), sumsLine(b.manifest, manifestName)
	canonical := zipLine + manifestLine
	zipSum, manifestSum := strings.Fields(zipLine)[0], strings.Fields(manifestLine)[0]
	wrong := strings.Repeat("0", 64)
	for _, r := range []release{
		{name: "sums-crlf", about: "CRLF line ends", sums: strings.ReplaceAll(canonical, "\n", "\r\n"), tofu: Accepted},
		{name: "sums-blank-line", about: "a blank line between entries", sums: zipLine + "\n" + manifestLine, tofu: Refused},
		{name: "sums-trailing-blank-line", about: "a blank line at the end", sums: canonical + "\n", tofu: Refused},
		{name: "sums-binary-markers", about: "`<hex> *<name>` lines, as sha256sum -b writes", sums: zipSum + " *" + zipName + "\n" + manifestSum + " *" + manifestName + "\n", tofu: Refused},
		{name: "sums-marker-on-manifest", about: "the binary-mode marker on the manifest.json line only", sums: zipLine + manifestSum + " *" + manifestName + "\n", tofu: Accepted},
		{name: "sums-bom", about: "a UTF-8 byte order mark before the first line (the zip's)", sums: "\ufeff" + canonical, tofu: Refused},
		{name: "sums-bom-manifest-first", about: "a byte order mark before the first line, the manifest's", sums: "\ufeff" + manifestLine + zipLine, tofu: Accepted, unsigned: true},
		{name: "sums-duplicate-line", about: "the zip listed twice, identically", sums: zipLine + zipLine + manifestLine, tofu: Accepted},
		{name: "sums-conflict-first-wrong", about: "the zip listed twice, the first digest wrong", sums: wrong + "  " + zipName + "\n" + canonical, tofu: Refused},
		{name: "sums-conflict-second-wrong", about: "the zip listed twice, the second digest wrong", sums: canonical + wrong + "  " + zipName + "\n", tofu: Accepted},
		{name: "sums-uppercase", about: "upper-case hex digests", sums: strings.ToUpper(zipSum) + "  " + zipName + "\n" + strings.ToUpper(manifestSum) + "  " + manifestName + "\n", tofu: Accepted},
		{name: "sums-tab", about: "a tab between digest and name", sums: zipSum + "\t" + zipName + "\n" + manifestSum + "\t" + manifestName + "\n", tofu: Accepted},
		{name: "sums-comment", about: "a comment line", sums: "# release checksums\n" + canonical, tofu: Accepted, unsigned: true},
	} {
		r.signer, r.checksums = "ed25519", true
		if err := b.write(r); err != nil {
			return fmt.Errorf("corpus case %s: %w", r.name, err)
		}
	}
	return nil
}
