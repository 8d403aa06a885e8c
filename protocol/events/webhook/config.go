// Package webhook delivers the proxy's events (protocol/events) to HTTP
// endpoints, signed the Standard Webhooks way: a subscriptions file names
// the endpoints, what each wants and the secrets it is signed with; a
// Dispatcher queues each event per subscription without blocking and
// delivers it with retries (docs/events.md).
package webhook

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

// MaxConfigSize bounds a subscriptions file, and maxSecretFile a secret
// file; MaxSubscriptions bounds the subscriptions of one (each a worker
// and a queue).
const (
	MaxConfigSize    = 1 << 20
	maxSecretFile    = 4 << 10
	MaxSubscriptions = 1000
)

// DefaultTimeout is an attempt's timeout when a subscription sets none;
// MaxTimeout bounds the ones set.
const (
	DefaultTimeout = 10 * time.Second
	MaxTimeout     = 2 * time.Minute
)

// Secrets' decoded lengths, as the Standard Webhooks specification
// recommends.
const (
	minSecret = 24
	maxSecret = 64
)

// SecretPrefix starts a secret in the Standard Webhooks form
// whsec_<base64>.
const SecretPrefix = "whsec_"

// fileConfig is the subscriptions file.
type fileConfig struct {
	Subscriptions []subscriptionConfig `json:"subscriptions"`
}

// subscriptionConfig is one subscription as the file writes it.
type subscriptionConfig struct {
	Name        string   `json:"name"`
	URL         string   `json:"url"`
	Types       []string `json:"types,omitempty"`
	Addresses   []string `json:"addresses,omitempty"`
	Secrets     []string `json:"secrets,omitempty"`
	SecretFiles []string `json:"secret_files,omitempty"`
	Timeout     string   `json:"timeout,omitempty"`
}

// Config is a parsed subscriptions file.
type Config struct {
	Subscriptions []Subscription
}

// Subscription is one endpoint and the events it wants.
type Subscription struct {
	// Name names it in metrics, logs and the recent deliveries: never
	// the URL, which may carry a token.
	Name string
	// URL is where events are POSTed: https, or http to 127.0.0.1 or
	// ::1.
	URL *url.URL
	// Types are the event types it wants: exact, or a prefix ending in
	// "*" (io.oci-tofu.policy.*); none is every type.
	Types []string
	// Addresses are path.Match patterns the event's address must match
	// one of (registry.example.com/acme/*: "*" does not cross a "/");
	// none is every event, and an event without an address (audit.lost)
	// matches only then.
	Addresses []string
	// Timeout bounds each attempt.
	Timeout time.Duration

	// secrets are the keys signed with, each a signature of every
	// delivery: several during a rotation.
	secrets [][]byte
}

// Wants is whether the subscription takes events of type typ about
// address.
func (s *Subscription) Wants(typ, address string) bool {
	return s.wantsType(typ) && s.wantsAddress(address)
}

func (s *Subscription) wantsType(typ string) bool {
	if len(s.Types) == 0 {
		return true
	}
	for _, t := range s.Types {
		if prefix, ok := strings.CutSuffix(t, "*"); ok && strings.HasPrefix(typ, prefix) || t == typ {
			return true
		}
	}
	return false
}

func (s *Subscription) wantsAddress(address string) bool {
	if len(s.Addresses) == 0 {
		return true
	}
	for _, p := range s.Addresses {
		if ok, _ := path.Match(p, address); ok {
			return true
		}
	}
	return false
}

// Endpoint is the URL as logs may name it: scheme and host only (a path
// or query may hold a token).
func (s *Subscription) Endpoint() string {
	return s.URL.Scheme + "://" + s.URL.Host
}

// Load reads the subscriptions file at file (YAML or JSON, at most
// MaxConfigSize); relative secret_files are relative to its directory.
func Load(file string) (*Config, error) {
	f, err := openRegular(file)
	if err != nil {
		return nil, fmt.Errorf("events file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, fmt.Errorf("events file %s: %w", file, err)
	}
	if len(b) > MaxConfigSize {
		return nil, fmt.Errorf("events file %s: larger than %d bytes", file, MaxConfigSize)
	}
	cfg, err := Parse(b, filepath.Dir(file))
	if err != nil {
		return nil, fmt.Errorf("events file %s: %w", file, err)
	}
	return cfg, nil
}

// Parse reads a subscriptions file's content: unknown fields are errors,
// and so is every subscription without a name, a URL allowed, a secret,
// or with a bad pattern; dir is where relative secret_files are.
func Parse(b []byte, dir string) (*Config, error) {
	if len(b) > MaxConfigSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxConfigSize)
	}
	var fc fileConfig
	if err := yaml.UnmarshalStrict(b, &fc); err != nil {
		return nil, withoutSecret(err)
	}
	if len(fc.Subscriptions) > MaxSubscriptions {
		return nil, fmt.Errorf("%d subscriptions, more than %d", len(fc.Subscriptions), MaxSubscriptions)
	}
	cfg := &Config{}
	names := map[string]bool{}
	for i, sc := range fc.Subscriptions {
		s, err := sc.parse(dir)
		if err != nil {
			if sc.Name != "" && validName.MatchString(sc.Name) {
				return nil, fmt.Errorf("subscription %q: %w", sc.Name, err)
			}
			return nil, fmt.Errorf("subscription %d: %w", i+1, err)
		}
		if names[s.Name] {
			return nil, fmt.Errorf("subscription %q: named twice", s.Name)
		}
		names[s.Name] = true
		cfg.Subscriptions = append(cfg.Subscriptions, *s)
	}
	return cfg, nil
}

// withoutSecret is err, or, when its text quotes a secret (YAML's
// conversion quotes the value of a key it cannot convert), an error
// that does not: the file's errors are logged.
func withoutSecret(err error) error {
	if strings.Contains(err.Error(), SecretPrefix) {
		return errors.New("not a subscriptions file (its error, which quotes a secret, is not shown): look for a key that is null, a list or a map")
	}
	return err
}

// validName is a subscription's name: a metrics label value, short and
// plain.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

func (sc subscriptionConfig) parse(dir string) (*Subscription, error) {
	if !validName.MatchString(sc.Name) {
		return nil, errors.New(`a name (letters, digits, ".", "_", "-", at most 63) is required`)
	}
	u, err := parseURL(sc.URL)
	if err != nil {
		return nil, err
	}
	s := &Subscription{Name: sc.Name, URL: u, Types: sc.Types, Addresses: sc.Addresses, Timeout: DefaultTimeout}
	for _, t := range sc.Types {
		if t == "" || strings.Contains(strings.TrimSuffix(t, "*"), "*") {
			return nil, fmt.Errorf("type %q: a type, or a prefix ending in \"*\"", t)
		}
	}
	for _, p := range sc.Addresses {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			return nil, fmt.Errorf("address pattern %q: not a pattern", p)
		}
	}
	if sc.Timeout != "" {
		if s.Timeout, err = time.ParseDuration(sc.Timeout); err != nil || s.Timeout <= 0 || s.Timeout > MaxTimeout {
			return nil, fmt.Errorf("timeout %q: a duration (10s), more than 0 and at most %s", sc.Timeout, MaxTimeout)
		}
	}
	if s.secrets, err = readSecrets(sc.Secrets, sc.SecretFiles, dir); err != nil {
		return nil, err
	}
	return s, nil
}

// parseURL is an endpoint's URL: https, or http to a loopback address
// (for tests and local receivers), without credentials or a fragment.
func parseURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("a url is required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url's errors quote the URL, which may hold a token.
		return nil, errors.New("url: not a URL")
	}
	switch {
	case u.User != nil:
		return nil, errors.New("url: credentials in a URL are not allowed (the secrets sign deliveries)")
	case u.Host == "" || u.Opaque != "":
		return nil, errors.New("url: an absolute URL with a host is required")
	case u.Fragment != "" || u.RawFragment != "":
		return nil, errors.New("url: a fragment is not allowed")
	case u.Scheme == "https":
		return u, nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return u, nil
	case u.Scheme == "http":
		return nil, errors.New("url: http is allowed to 127.0.0.1 and ::1 only; use https")
	}
	return nil, fmt.Errorf("url: scheme %q, not https", u.Scheme)
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && (ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback))
}

// readSecrets decodes the secrets given inline and in files (each file
// one secret, whitespace around it ignored); at least one is required.
// Errors name a secret by its place, never its value.
func readSecrets(inline, files []string, dir string) ([][]byte, error) {
	var keys [][]byte
	for i, s := range inline {
		k, err := decodeSecret(s)
		if err != nil {
			return nil, fmt.Errorf("secret %d: %w", i+1, err)
		}
		keys = append(keys, k)
	}
	for i, name := range files {
		if strings.Contains(name, SecretPrefix) { // its errors would quote it
			return nil, fmt.Errorf("secret file %d: its name holds a secret (%s…): a secret goes under secrets, a file's name under secret_files", i+1, SecretPrefix)
		}
		s, err := readSecretFile(name, dir)
		if err != nil {
			return nil, err
		}
		k, err := decodeSecret(s)
		if err != nil {
			return nil, fmt.Errorf("secret file %s: %w", name, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("at least one secret (secrets or secret_files) is required: deliveries are signed")
	}
	return keys, nil
}

func readSecretFile(name, dir string) (string, error) {
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	f, err := openRegular(p)
	if err != nil {
		return "", fmt.Errorf("secret file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", fmt.Errorf("secret file %s: %w", name, err)
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("secret file %s: larger than %d bytes", name, maxSecretFile)
	}
	return strings.TrimSpace(string(b)), nil
}

// openRegular opens the regular file at p for reading (a symlink to
// one, as Kubernetes mounts ConfigMaps and Secrets, is followed), and
// refuses anything else unread: opening a FIFO waits for a writer, and
// a device or a directory is not a file the operator meant.
func openRegular(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	return f, nil
}

// decodeSecret is the key of a secret whsec_<base64>.
func decodeSecret(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("not of the form %s<base64>", SecretPrefix)
	}
	k, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("not of the form %s<base64>: the rest is not base64", SecretPrefix)
	}
	if len(k) < minSecret || len(k) > maxSecret {
		return nil, fmt.Errorf("%d bytes, not %d to %d", len(k), minSecret, maxSecret)
	}
	return k, nil
}

// NewSecret is a fresh random secret in the whsec_ form (32 bytes).
func NewSecret() string {
	return SecretPrefix + base64.StdEncoding.EncodeToString(randomBytes(32))
}
