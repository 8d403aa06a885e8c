package testenv

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// OriginRelease is a provider release directory to publish on a test origin
// registry, with the armored public key its signature verifies against.
type OriginRelease struct {
	Namespace, Type string
	Dir             string // a release dir as in testdata/providers/<type>/<version>
	Key             string // armored public key file
}

// Origin is a static Provider Registry Protocol origin served over TLS: a
// directory of JSON documents and release files, written once and served
// by a plain file server, as a minimal public registry would be. It writes
// the documents from the protocol's field names, not from oci-tofu's own
// types, so the client is tested against the format rather than itself.
type Origin struct {
	Host string // localhost:PORT
	Root string
	site // access log, stop and start (origin_site.go)
}

// OriginOptions shape the origin's network, to stand in for a remote
// registry: a delay before each answer and a per-connection bandwidth cap.
type OriginOptions struct {
	Latency        time.Duration
	BytesPerSecond int64
}

// StartOrigin publishes releases and serves them until the test ends.
func StartOrigin(t testing.TB, releases []OriginRelease) *Origin {
	return StartOriginWith(t, releases, OriginOptions{})
}

// StartOriginWith is StartOrigin with a simulated network.
func StartOriginWith(t testing.TB, releases []OriginRelease, opts OriginOptions) *Origin {
	t.Helper()
	root := t.TempDir()
	o := &Origin{Root: root}
	l := listenLoopback(t)
	o.Host = loopbackHost(l)
	writeJSON := func(rel string, v any) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeJSONFile(t, p, v)
	}
	writeJSON(".well-known/terraform.json", map[string]string{"providers.v1": "/v1/providers/"})
	type platform struct {
		OS   string `json:"os"`
		Arch string `json:"arch"`
	}
	type version struct {
		Version   string     `json:"version"`
		Protocols []string   `json:"protocols"`
		Platforms []platform `json:"platforms"`
	}
	versions := map[string][]version{}
	for _, r := range releases {
		entries, err := os.ReadDir(r.Dir)
		if err != nil {
			t.Fatal(err)
		}
		armor, err := os.ReadFile(r.Key)
		if err != nil {
			t.Fatal(err)
		}
		prefix := "terraform-provider-" + r.Type + "_"
		var ver string
		var plats []platform
		var sums, sig string
		for _, e := range entries {
			n := e.Name()
			rest, ok := strings.CutPrefix(n, prefix)
			if !ok {
				continue
			}
			filesDir := filepath.Join(root, "files", r.Namespace, r.Type)
			os.MkdirAll(filesDir, 0o755)
			b, _ := os.ReadFile(filepath.Join(r.Dir, n))
			os.WriteFile(filepath.Join(filesDir, n), b, 0o644)
			parts := strings.Split(strings.TrimSuffix(rest, ".zip"), "_")
			ver = parts[0]
			switch {
			case strings.HasSuffix(n, ".zip") && len(parts) == 3:
				plats = append(plats, platform{parts[1], parts[2]})
			case strings.HasSuffix(n, "_SHA256SUMS"):
				sums = n
			case strings.HasSuffix(n, "_SHA256SUMS.sig"):
				sig = n
			}
		}
		sort.Slice(plats, func(i, j int) bool { return plats[i].OS+plats[i].Arch < plats[j].OS+plats[j].Arch })
		key := r.Namespace + "/" + r.Type
		versions[key] = append(versions[key], version{Version: ver, Protocols: []string{"6.0"}, Platforms: plats})
		sumsData, _ := os.ReadFile(filepath.Join(r.Dir, sums))
		for _, p := range plats {
			zip := prefix + ver + "_" + p.OS + "_" + p.Arch + ".zip"
			var shasum string
			for _, line := range strings.Split(string(sumsData), "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[1] == zip {
					shasum = f[0]
				}
			}
			files := "/files/" + key + "/"
			writeJSON(fmt.Sprintf("v1/providers/%s/%s/download/%s/%s", key, ver, p.OS, p.Arch), map[string]any{
				"protocols":             []string{"6.0"},
				"os":                    p.OS,
				"arch":                  p.Arch,
				"filename":              zip,
				"download_url":          files + zip,
				"shasums_url":           files + sums,
				"shasums_signature_url": files + sig,
				"shasum":                shasum,
				"signing_keys": map[string]any{"gpg_public_keys": []map[string]string{
					{"key_id": "", "ascii_armor": string(armor)},
				}},
			})
		}
	}
	for key, vs := range versions {
		writeJSON("v1/providers/"+key+"/versions", map[string]any{"versions": vs})
	}
	o.serve(t, l, root, opts)
	return o
}

// throttled paces writes to a fixed rate.
type throttled struct {
	http.ResponseWriter
	rate    int64
	start   time.Time
	written int64
}

func (t *throttled) Write(p []byte) (int, error) {
	const chunk = 32 << 10
	total := 0
	for len(p) > 0 {
		n := min(len(p), chunk)
		w, err := t.ResponseWriter.Write(p[:n])
		total += w
		t.written += int64(w)
		if err != nil {
			return total, err
		}
		p = p[n:]
		due := t.start.Add(time.Duration(float64(t.written) / float64(t.rate) * float64(time.Second)))
		time.Sleep(time.Until(due))
	}
	return total, nil
}
