//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// serveWithChart runs the image as the chart's Deployment says: the
// container's arguments and environment as rendered, its Secret and
// ConfigMap volumes written where the kubelet would mount them (as the
// kubelet writes them: a "..data" link to a timestamped directory), and
// real tofu installs a provider through it. The chart's inline policy
// (a ConfigMap of its own) and the registry CA (a ConfigMap of the
// cluster's) reach the proxy: the version the policy denies is not
// listed.
func serveWithChart(t *testing.T, c container) {
	reg := testenv.StartRegistry(t)
	ca := testenv.NewCA(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0", "1.1.0")
	port := testenv.FreePort(t)
	values := map[string]any{
		"serve":      map[string]any{"provider-template": reg.Host + "/providers/${namespace}/${type}", "log-format": "text"},
		"service":    map[string]any{"targetPort": port},
		"listenHost": "127.0.0.1", // the pod's network is the test machine's
		"registry":   map[string]any{"dockerConfigSecret": "registry-credentials"},
		"files": map[string]any{
			"ca-file": map[string]any{"configMap": "registry-ca", "key": "ca.crt"},
			"policy":  map[string]any{"inline": `provider "example.com/test/hello" { deny = ["1.1.0"] }` + "\n"},
		},
		"shutdown": map[string]any{"delaySeconds": 1, "timeoutSeconds": 10},
	}
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(valuesFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := decodeStrict(t, mustHelm(t, t.TempDir(), "template", "t", chartDir, "-f", valuesFile))
	secrets := map[string]map[string][]byte{
		"t-oci-tofu-tls":       {"tls.crt": readBoundedFile(t, ca.ServerCertFile), "tls.key": readBoundedFile(t, ca.ServerKeyFile)},
		"registry-credentials": {".dockerconfigjson": []byte(`{"auths":{}}`)},
	}
	configMaps := map[string]map[string][]byte{"registry-ca": {"ca.crt": readBoundedFile(t, ca.CertFile)}}
	for name, cm := range r.configMaps {
		configMaps[name] = map[string][]byte{}
		for k, v := range cm.Data {
			configMaps[name][k] = []byte(v)
		}
	}
	spec := r.deployment.Spec.Template.Spec
	ctr := r.container(t)
	mountVolumes(t, c.Root, spec.Volumes, ctr.VolumeMounts, secrets, configMaps)
	if err := os.WriteFile(filepath.Join(c.Root, "etc", "hosts"), []byte("127.0.0.1 localhost\n::1 localhost\n"), 0o644); err != nil {
		t.Fatal(err) // what the runtime provides
	}
	c.run(t, nil, "--version") // the image runs at all
	cmd := c.command(t, context.Background(), containerEnv(t, ctr, secrets), ctr.Args...)
	s := launchServe(t, cmd, port)
	waitUntil(t, 30*time.Second, "/readyz to answer 200", func() bool { code, _ := s.get(t, "/readyz"); return code == 200 })
	if environ := readBoundedFile(t, fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid)); !strings.Contains(string(environ), "GOMEMLIMIT=460MiB") {
		t.Errorf("the proxy runs without the chart's GOMEMLIMIT (90 %% of the default 512 MiB: 460MiB): %q", environ)
	}
	code, body := s.get(t, "/v1/mirror/example.com/test/hello/index.json")
	if code != 200 || !strings.Contains(string(body), `"1.0.0"`) || strings.Contains(string(body), `"1.1.0"`) {
		t.Fatalf("index.json through the chart's proxy: %d %s (want 1.0.0 only: the policy denies 1.1.0)", code, body)
	}
	tofu := testenv.Tofu(t, networkMirrorConfig(s))
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, ">= 1.0.0")})
	if out := tofu.Run(t, dir, "init", "-input=false", "-no-color"); !strings.Contains(out, "Installed example.com/test/hello v1.0.0") {
		t.Errorf("tofu init through the chart's proxy:\n%s", out)
	}
}

// mountVolumes writes each Secret and ConfigMap volume the container
// mounts into root, as the kubelet does; an emptyDir must already be a
// directory of the image (/tmp).
func mountVolumes(t *testing.T, root string, volumes []corev1.Volume, mounts []corev1.VolumeMount, secrets, configMaps map[string]map[string][]byte) {
	t.Helper()
	byName := map[string]corev1.Volume{}
	for _, v := range volumes {
		byName[v.Name] = v
	}
	for _, m := range mounts {
		v, ok := byName[m.Name]
		if !ok {
			t.Fatalf("volume mount %s names no volume", m.Name)
		}
		var data map[string][]byte
		var items []corev1.KeyToPath
		switch {
		case v.Secret != nil:
			data, items = secrets[v.Secret.SecretName], v.Secret.Items
		case v.ConfigMap != nil:
			data, items = configMaps[v.ConfigMap.Name], v.ConfigMap.Items
		case v.EmptyDir != nil:
			if fi, err := os.Stat(filepath.Join(root, m.MountPath)); err != nil || !fi.IsDir() {
				t.Fatalf("emptyDir %s at %s: the image has no such directory", m.Name, m.MountPath)
			}
			continue
		default:
			t.Fatalf("volume %s: a kind the test does not mount", m.Name)
		}
		if data == nil {
			t.Fatalf("volume %s: no Secret or ConfigMap %v in the test's cluster", m.Name, v.VolumeSource)
		}
		files := map[string][]byte{}
		for _, it := range items {
			b, ok := data[it.Key]
			if !ok {
				t.Fatalf("volume %s: key %s missing", m.Name, it.Key)
			}
			files[it.Path] = b
		}
		if len(items) == 0 {
			files = data
		}
		dir := filepath.Join(root, m.MountPath)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		(&secretVolume{dir: dir}).write(t, files)
	}
}

// containerEnv is the container's environment as the kubelet sets it.
func containerEnv(t *testing.T, c corev1.Container, secrets map[string]map[string][]byte) []string {
	t.Helper()
	var env []string
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			env = append(env, e.Name+"="+string(secrets[ref.Name][ref.Key]))
		default:
			t.Fatalf("env %s: a source the test does not resolve", e.Name)
		}
	}
	return env
}
