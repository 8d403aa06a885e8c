package webhook

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// secretOf is a whsec_ secret of n bytes of b.
func secretOf(b byte, n int) string {
	return SecretPrefix + base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(b), n)))
}

// TestParseExample reads the documented example (docs/events.md).
func TestParseExample(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ops.secret"), []byte(secretOf('b', 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "events.yaml")
	if err := os.WriteFile(file, []byte(`subscriptions:
- name: security
  url: https://hooks.example.com/oci-tofu?channel=sec
  types: [io.oci-tofu.policy.*, io.oci-tofu.vulnerability.detected.v1]
  addresses: ["registry.example.com/acme/*"]
  secrets: [`+secretOf('a', 32)+`]
  secret_files: [ops.secret]
  timeout: 5s
- name: everything
  url: http://127.0.0.1:8081/events
  secrets: [`+secretOf('c', 24)+`]
- name: v6
  url: http://[::1]:8081/events
  secrets: [`+secretOf('d', 64)+`]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Subscriptions) != 3 {
		t.Fatalf("%d subscriptions", len(cfg.Subscriptions))
	}
	s := cfg.Subscriptions[0]
	if s.Name != "security" || s.URL.Host != "hooks.example.com" || s.Timeout != 5*time.Second || len(s.secrets) != 2 ||
		string(s.secrets[1]) != strings.Repeat("b", 32) || s.Endpoint() != "https://hooks.example.com" {
		t.Errorf("security: %+v", s)
	}
	if e := cfg.Subscriptions[1]; e.Timeout != DefaultTimeout || len(e.Types) != 0 || len(e.secrets) != 1 {
		t.Errorf("everything: %+v", e)
	}
}

// TestParseErrors: each bad file is refused with an error naming the
// fault, never a secret's value or the URL's token.
func TestParseErrors(t *testing.T) {
	good := secretOf('a', 32)
	sub := func(fields string) string {
		return "subscriptions:\n- name: s\n" + fields
	}
	for name, c := range map[string]struct{ file, want string }{
		"unknown field":    {sub("  url: https://h.example/\n  secrets: [" + good + "]\n  retries: 3\n"), "unknown field"},
		"unknown top":      {"subscription: []\n", "unknown field"},
		"no name":          {"subscriptions:\n- url: https://h.example/\n  secrets: [" + good + "]\n", "subscription 1: a name"},
		"bad name":         {"subscriptions:\n- name: a b\n  url: https://h.example/\n  secrets: [" + good + "]\n", "subscription 1: a name"},
		"twice":            {sub("  url: https://h.example/\n  secrets: ["+good+"]\n") + "- name: s\n  url: https://h.example/\n  secrets: [" + good + "]\n", "named twice"},
		"no url":           {sub("  secrets: [" + good + "]\n"), "a url is required"},
		"http remote":      {sub("  url: http://h.example/\n  secrets: [" + good + "]\n"), "127.0.0.1 and ::1 only"},
		"http localhost":   {sub("  url: http://localhost:80/\n  secrets: [" + good + "]\n"), "127.0.0.1 and ::1 only"},
		"ftp":              {sub("  url: ftp://h.example/\n  secrets: [" + good + "]\n"), `scheme "ftp"`},
		"userinfo":         {sub("  url: https://user:TOKEN@h.example/\n  secrets: [" + good + "]\n"), "credentials"},
		"relative":         {sub("  url: /hook\n  secrets: [" + good + "]\n"), "absolute URL"},
		"fragment":         {sub("  url: https://h.example/#TOKEN\n  secrets: [" + good + "]\n"), "fragment"},
		"not a url":        {sub("  url: \"https://h.example/%zzTOKEN\"\n  secrets: [" + good + "]\n"), "not a URL"},
		"no secret":        {sub("  url: https://h.example/\n"), "at least one secret"},
		"no prefix":        {sub("  url: https://h.example/\n  secrets: [TOKENTOKENTOKEN]\n"), "secret 1: not of the form whsec_"},
		"not base64":       {sub("  url: https://h.example/\n  secrets: [whsec_TOKEN!!]\n"), "not base64"},
		"short secret":     {sub("  url: https://h.example/\n  secrets: [" + secretOf('T', 16) + "]\n"), "16 bytes, not 24 to 64"},
		"long secret":      {sub("  url: https://h.example/\n  secrets: [" + secretOf('T', 65) + "]\n"), "65 bytes"},
		"missing file":     {sub("  url: https://h.example/\n  secret_files: [nowhere]\n"), "secret file"},
		"bad pattern":      {sub("  url: https://h.example/\n  secrets: [" + good + "]\n  addresses: [\"registry.example.com/[\"]\n"), "not a pattern"},
		"bad type":         {sub("  url: https://h.example/\n  secrets: [" + good + "]\n  types: [\"io.*.v1\"]\n"), "a prefix ending"},
		"bad timeout":      {sub("  url: https://h.example/\n  secrets: [" + good + "]\n  timeout: soon\n"), `timeout "soon"`},
		"too long timeout": {sub("  url: https://h.example/\n  secrets: [" + good + "]\n  timeout: 1h\n"), "at most 2m0s"},
		"not yaml":         {"subscriptions: [\n", "yaml"},
	} {
		_, err := Parse([]byte(c.file), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", name, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "TOKEN") || strings.Contains(err.Error(), good) {
			t.Errorf("%s: the error tells a secret: %v", name, err)
		}
	}
}

// TestLoadBounds: a file over MaxConfigSize is refused unread, and so
// is a secret file over 4 KiB.
func TestLoadBounds(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("subscriptions: []\n"+strings.Repeat("#", MaxConfigSize)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a big file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "s"), []byte(strings.Repeat("a", 5000)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Parse([]byte("subscriptions:\n- name: s\n  url: https://h.example/\n  secret_files: [s]\n"), dir)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a big secret file: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "absent.yaml")); err == nil {
		t.Error("an absent file loaded")
	}
}

// TestFilters: types exact or by a trailing-* prefix; addresses by
// path.Match ("*" within one segment); an address-less event only
// without an address filter.
func TestFilters(t *testing.T) {
	s := Subscription{Types: []string{"io.oci-tofu.policy.*", "io.oci-tofu.version.ingested.v1"},
		Addresses: []string{"registry.example.com/acme/*", "registry.example.com/acme/*/*"}}
	for _, c := range []struct {
		typ, address string
		want         bool
	}{
		{"io.oci-tofu.policy.denied.v1", "registry.example.com/acme/aws", true},
		{"io.oci-tofu.policy.revoked.v1", "registry.example.com/acme/vpc/aws", true},
		{"io.oci-tofu.version.ingested.v1", "registry.example.com/acme/aws", true},
		{"io.oci-tofu.version.ingested.v10", "registry.example.com/acme/aws", false},
		{"io.oci-tofu.version.pruned.v1", "registry.example.com/acme/aws", false},
		{"io.oci-tofu.policy.denied.v1", "registry.example.com/other/aws", false},
		{"io.oci-tofu.policy.denied.v1", "registry.example.com/acme/vpc/aws/extra", false},
		{"io.oci-tofu.policy.denied.v1", "", false},
	} {
		if got := s.Wants(c.typ, c.address); got != c.want {
			t.Errorf("Wants(%s, %s) = %v", c.typ, c.address, got)
		}
	}
	all := Subscription{}
	if !all.Wants("io.oci-tofu.audit.lost.v1", "") || !all.Wants("anything", "anywhere") {
		t.Error("no filters, not everything")
	}
}
