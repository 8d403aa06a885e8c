package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// enforceExpiration is OpenTofu's switch for refusing expired keys; oci-tofu
// honours the same variable.
const enforceExpiration = "OPENTOFU_ENFORCE_GPG_EXPIRATION=true"

// tofuExpiryWarning is what tofu 1.12 prints when it installs a release
// signed by an expired key, subkey or signature.
const tofuExpiryWarning = "gpg key expired"

// tofuInstall is what `tofu init` did with a release.
type tofuInstall struct {
	decision testenv.Decision
	// unsigned: installed, but not reported as signed.
	unsigned bool
	keyID    string
	out      string
}

var signedBy = regexp.MustCompile(`\(signed, key ID ([0-9A-F]{16})\)`)

// tofuDecision installs provider HOST/NAMESPACE/hello 1.0.0 with the real
// `tofu init` (CLI configuration cliConfig, extra environment env):
// installed, installed with the expiry warning, or refused.
func tofuDecision(t *testing.T, host, namespace, cliConfig string, env ...string) tofuInstall {
	t.Helper()
	tofu := testenv.Tofu(t, cliConfig)
	tofu.Env = append(tofu.Env, env...)
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(`
terraform {
  required_providers {
    hello = {
      source  = "%s/%s/hello"
      version = "%s"
    }
  }
}
`, host, namespace, testenv.CorpusVersion)})
	out, err := tofu.Try(t, dir, "init", "-input=false", "-no-color")
	// Not "signed": tofu says "(verified checksum)" from an origin, or
	// "Signature validation was skipped" from a registry that reports
	// package hashes (v1.12 packages), as oci-tofu serve does.
	r := tofuInstall{out: out, unsigned: err == nil && !signedBy.MatchString(out)}
	if m := signedBy.FindStringSubmatch(out); m != nil {
		r.keyID = m[1]
	}
	switch {
	case err != nil:
		r.decision = testenv.Refused
	case strings.Contains(out, tofuExpiryWarning):
		r.decision = testenv.AcceptedWithWarning
	default:
		r.decision = testenv.Accepted
	}
	return r
}

// ociTofuOutcome is what an oci-tofu command made of a release, read from
// its --json output.
type ociTofuOutcome struct {
	decision testenv.Decision
	// unsignedNote: a warning that OpenTofu takes none of the SHA256SUMS
	// hashes as signed.
	unsignedNote bool
	keyID        string
	out          string
}

// outcome classifies a command's result: refused, accepted with a warning
// about an expired key, subkey or signature, or accepted.
func outcome(out string, failed bool, warnings []string, keyIDs []string) ociTofuOutcome {
	o := ociTofuOutcome{out: out, decision: testenv.Accepted}
	if len(keyIDs) > 0 {
		o.keyID = keyIDs[0]
	}
	for _, w := range warnings {
		if strings.Contains(w, "expired on") || strings.Contains(w, "in the future") {
			o.decision = testenv.AcceptedWithWarning
		}
		if strings.Contains(w, `"verified checksum"`) {
			o.unsignedNote = true
		}
	}
	if failed {
		o.decision = testenv.Refused
	}
	return o
}

// runWithEnv is run with extra environment variables.
func runWithEnv(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	full := append(os.Environ(), "SSL_CERT_FILE="+testenv.NewCA(t).CertFile, "DOCKER_CONFIG="+t.TempDir())
	return testenv.Run(t, "", append(full, env...), ociTofu, args...)
}

// pushDecision pushes a corpus release with `oci-tofu push provider --key`
// into repo; enforced expiry comes from OpenTofu's environment variable.
func pushDecision(t *testing.T, c testenv.SigCase, repo string, enforced bool) ociTofuOutcome {
	t.Helper()
	var env []string
	if enforced {
		env = append(env, enforceExpiration)
	}
	out, err := runWithEnv(t, env, "push", "provider", "--json", "--key", c.Key, c.Dir, repo)
	var res struct {
		Warnings    []string `json:"warnings"`
		SigningKeys []string `json:"signing_keys"`
	}
	if err == nil {
		if jerr := json.Unmarshal([]byte(out), &res); jerr != nil {
			t.Fatalf("push --json: %v\n%s", jerr, out)
		}
	}
	return outcome(out, err != nil, res.Warnings, res.SigningKeys)
}

// mirrorDecision mirrors a corpus release from the origin registry with
// `oci-tofu mirror`; enforced expiry comes from --enforce-gpg-expiration.
func mirrorDecision(t *testing.T, origin *testenv.Origin, c testenv.SigCase, template string, enforced bool) ociTofuOutcome {
	t.Helper()
	args := []string{"mirror", "--json", "--provider-template", template, "--platform", testenv.CorpusPlatform}
	if enforced {
		args = append(args, "--enforce-gpg-expiration")
	}
	out, err := run(t, append(args, origin.Host+"/"+c.Name+"/hello")...)
	var res struct {
		Results []struct {
			Error    string   `json:"error"`
			Warnings []string `json:"warnings"`
		} `json:"results"`
	}
	if jerr := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &res); jerr != nil || len(res.Results) != 1 {
		t.Fatalf("mirror --json (%v): %v\n%s", err, jerr, out)
	}
	r := res.Results[0]
	if (r.Error != "") != (err != nil) {
		t.Fatalf("mirror exit status %v disagrees with its result %+v", err, r)
	}
	return outcome(out, r.Error != "", r.Warnings, nil)
}

// startCorpusOrigin publishes every corpus case under its own namespace,
// its SHA256SUMS and signature served verbatim.
func startCorpusOrigin(t *testing.T, cases []testenv.SigCase) *testenv.Origin {
	releases := make([]testenv.OriginRelease, len(cases))
	for i, c := range cases {
		releases[i] = testenv.OriginRelease{Namespace: c.Name, Type: testenv.CorpusType, Dir: c.Dir, Key: c.Key}
	}
	return testenv.StartOriginVerbatim(t, releases)
}

// For every release of the GnuPG corpus, oci-tofu decides as OpenTofu 1.12
// decides: the real `tofu init` installs it from its origin registry
// (installed / installed with the expiry warning / refused), with and
// without OPENTOFU_ENFORCE_GPG_EXPIRATION=true; `oci-tofu push provider
// --key` and `oci-tofu mirror` get the same input and must accept it
// (perhaps with a warning naming the expired key) or refuse it alike.
// What oci-tofu accepts then installs through `oci-tofu serve` exactly as
// from the origin: oci-tofu never vouches for a release OpenTofu refuses.
func TestSignatureCorpusAgreesWithTofu(t *testing.T) {
	cases := testenv.SignatureCorpus(t)
	origin := startCorpusOrigin(t, cases)
	reg := testenv.StartRegistry(t)
	proxy := startServe(t, "--provider-template", reg.Host+"/pushed/${namespace}/${type}")
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			for _, enforced := range []bool{false, true} {
				want, env, suffix := c.Tofu, []string(nil), "default"
				if enforced {
					want, env, suffix = c.TofuEnforced, []string{enforceExpiration}, "enforced"
				}
				tofu := tofuDecision(t, origin.Host, c.Name, "", env...)
				if tofu.decision != want {
					t.Errorf("%s: tofu %s, the corpus says %s:\n%s", suffix, tofu.decision, want, tofu.out)
				}
				if tofu.decision != testenv.Refused && tofu.unsigned != c.TofuUnsigned {
					t.Errorf("%s: tofu installed as verified checksum: %v, the corpus says %v:\n%s", suffix, tofu.unsigned, c.TofuUnsigned, tofu.out)
				}
				repo := reg.Host + "/pushed-" + suffix + "/" + c.Name + "/hello"
				if !enforced {
					repo = reg.Host + "/pushed/" + c.Name + "/hello"
				}
				push := pushDecision(t, c, repo, enforced)
				mirror := mirrorDecision(t, origin, c, reg.Host+"/mirrored-"+suffix+"/${namespace}/${type}", enforced)
				for _, o := range []struct {
					name string
					got  ociTofuOutcome
				}{{"push provider", push}, {"mirror", mirror}} {
					if o.got.decision != tofu.decision {
						t.Errorf("%s: oci-tofu %s: %s, tofu: %s\noci-tofu:\n%s\ntofu:\n%s", suffix, o.name, o.got.decision, tofu.decision, o.got.out, tofu.out)
					} else if o.got.decision != testenv.Refused && o.got.unsignedNote != tofu.unsigned {
						t.Errorf("%s: oci-tofu %s warns that tofu drops the signed hashes: %v, tofu installed as verified checksum: %v\n%s", suffix, o.name, o.got.unsignedNote, tofu.unsigned, o.got.out)
					}
				}
				if push.decision != testenv.Refused && tofu.keyID != "" && push.keyID != tofu.keyID {
					t.Errorf("%s: oci-tofu reports key %s, tofu %s", suffix, push.keyID, tofu.keyID)
				}
				if enforced || push.decision == testenv.Refused {
					continue
				}
				// Through the proxy's registry protocol, from what was pushed.
				served := tofuDecision(t, proxy.Host, c.Name, "", env...)
				if served.decision != tofu.decision || served.unsigned != tofu.unsigned {
					t.Errorf("through oci-tofu serve tofu decides %s (verified checksum: %v), from the origin %s (%v):\n%s", served.decision, served.unsigned, tofu.decision, tofu.unsigned, served.out)
				}
			}
		})
	}
}
