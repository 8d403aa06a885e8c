package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// chartDir is the chart, from the module root.
const chartDir = "deploy/helm/oci-tofu"

// serviceMonitorAPI is what `helm template` is told the cluster has, so
// the ServiceMonitor (which needs the Prometheus Operator's CRD) renders.
const serviceMonitorAPI = "monitoring.coreos.com/v1/ServiceMonitor"

// helm runs the helm `make tools` built, with its configuration, cache
// and registry logins in a directory of the test's own.
func helm(t *testing.T, home string, args ...string) (stdout string, err error) {
	t.Helper()
	cmd := exec.Command(testenv.Tool(t, "helm"), args...)
	cmd.Dir = testenv.Root(t)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"), "HELM_REGISTRY_CONFIG="+filepath.Join(home, "registry.json"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, errOut.String(), out.String())
	}
	return out.String(), nil
}

func mustHelm(t *testing.T, home string, args ...string) string {
	t.Helper()
	out, err := helm(t, home, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rendered are the objects of one rendering, decoded strictly.
type rendered struct {
	deployment *appsv1.Deployment
	kinds      []string
	configMaps map[string]*corev1.ConfigMap
}

// decodeStrict decodes every document of a rendering into its Kubernetes
// API type, failing on an unknown kind or field (a misspelt or misplaced
// field that kubectl would drop or the API server refuse).
func decodeStrict(t *testing.T, manifest string) rendered {
	t.Helper()
	r := rendered{configMaps: map[string]*corev1.ConfigMap{}}
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(manifest, -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		obj := newObject(head.APIVersion, head.Kind)
		if obj == nil {
			t.Fatalf("the chart renders %s %s, which the test does not know", head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("%s %s does not decode strictly: %v\n%s", head.APIVersion, head.Kind, err, doc)
		}
		r.kinds = append(r.kinds, head.Kind)
		switch o := obj.(type) {
		case *appsv1.Deployment:
			r.deployment = o
		case *corev1.ConfigMap:
			r.configMaps[o.Name] = o
		}
	}
	sort.Strings(r.kinds)
	return r
}

func stripComments(doc string) string {
	var keep []string
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// newObject is the API type of apiVersion and kind (nil: unknown).
func newObject(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "v1 Service":
		return &corev1.Service{}
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "networking.k8s.io/v1 NetworkPolicy":
		return &networkingv1.NetworkPolicy{}
	case "networking.k8s.io/v1 Ingress":
		return &networkingv1.Ingress{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}
	case "gateway.networking.k8s.io/v1 HTTPRoute":
		return &gatewayv1.HTTPRoute{}
	case "gateway.networking.k8s.io/v1 TLSRoute":
		return &gatewayv1.TLSRoute{}
	}
	return nil
}

// container is the proxy's container of the Deployment.
func (r rendered) container(t *testing.T) corev1.Container {
	t.Helper()
	if r.deployment == nil || len(r.deployment.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want a Deployment with one container, got kinds %v", r.kinds)
	}
	return r.deployment.Spec.Template.Spec.Containers[0]
}

// arg is the value of --flag in the container's arguments ("" if absent).
func arg(args []string, flag string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+flag+"="); ok {
			return v
		}
	}
	return ""
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// The chart lints, and renders, for each of its test values files, only
// objects that decode strictly into the Kubernetes API types, with the
// probes, memory arithmetic, scratch space and security context the docs
// promise.
func TestChartRenders(t *testing.T) {
	home := t.TempDir()
	files, err := filepath.Glob(filepath.Join(testenv.Root(t), chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("want at least 3 test values files in %s/ci, found %v (%v)", chartDir, files, err)
	}
	wantKinds := map[string][]string{
		"default-values.yaml":        {"Deployment", "PodDisruptionBudget", "Service"},
		"full-values.yaml":           {"ConfigMap", "Deployment", "HorizontalPodAutoscaler", "Ingress", "NetworkPolicy", "PodDisruptionBudget", "Service", "ServiceMonitor", "TLSRoute"},
		"behind-gateway-values.yaml": {"ConfigMap", "Deployment", "HTTPRoute", "Ingress", "Service"},
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			rel := filepath.Join(chartDir, "ci", name)
			mustHelm(t, home, "lint", "--strict", chartDir, "-f", rel)
			r := decodeStrict(t, mustHelm(t, home, "template", "t", chartDir, "-f", rel, "--api-versions", serviceMonitorAPI))
			if want, ok := wantKinds[name]; !ok || !slices.Equal(r.kinds, want) {
				t.Errorf("kinds %v, want %v", r.kinds, want)
			}
			var values struct {
				Memory struct{ LimitMiB, CachePercent, GoMemLimitPercent int64 }
				TLS    struct{ Enabled *bool }
			}
			values.Memory.LimitMiB, values.Memory.CachePercent, values.Memory.GoMemLimitPercent = 512, 45, 90
			if err := yaml.Unmarshal(readBoundedFile(t, f), &values); err != nil {
				t.Fatal(err)
			}
			checkPodSpec(t, r, values.Memory.LimitMiB, values.Memory.CachePercent, values.Memory.GoMemLimitPercent, values.TLS.Enabled == nil || *values.TLS.Enabled)
		})
	}
}

// checkPodSpec checks what every rendering must hold.
func checkPodSpec(t *testing.T, r rendered, limitMiB, cachePercent, goMemPercent int64, tls bool) {
	t.Helper()
	c := r.container(t)
	pod := r.deployment.Spec.Template.Spec
	if got := c.Resources.Limits.Memory().Value(); got != limitMiB<<20 {
		t.Errorf("memory limit %d, want %d MiB", got, limitMiB)
	}
	if got := c.Resources.Requests.Memory().Value(); got != limitMiB<<20 {
		t.Errorf("memory request %d, want the limit", got)
	}
	if got, want := arg(c.Args, "cache-bytes"), fmt.Sprint(limitMiB*cachePercent/100<<20); got != want {
		t.Errorf("--cache-bytes=%s, want %s (%d%% of %d MiB)", got, want, cachePercent, limitMiB)
	}
	if got, want := envValue(c, "GOMEMLIMIT"), fmt.Sprintf("%dMiB", limitMiB*goMemPercent/100); got != want {
		t.Errorf("GOMEMLIMIT=%s, want %s", got, want)
	}
	for probe, want := range map[*corev1.Probe]string{c.ReadinessProbe: "/readyz", c.LivenessProbe: "/livez", c.StartupProbe: "/livez"} {
		scheme := corev1.URISchemeHTTP
		if tls {
			scheme = corev1.URISchemeHTTPS
		}
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != want || probe.HTTPGet.Scheme != scheme {
			t.Errorf("probe %+v, want %s over %s", probe, want, scheme)
		}
	}
	sc, psc := c.SecurityContext, pod.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("security context %+v / pod %+v: want non-root, read-only root filesystem, no privilege escalation", sc, psc)
	}
	var tmp *corev1.Volume
	for i, v := range pod.Volumes {
		if v.Name == "tmp" {
			tmp = &pod.Volumes[i]
		}
	}
	if tmp == nil || tmp.EmptyDir == nil || tmp.EmptyDir.SizeLimit == nil || tmp.EmptyDir.SizeLimit.Value() < 1<<30 {
		t.Errorf("scratch volume %+v: want an emptyDir of at least 1 GiB at /tmp", tmp)
	}
	for _, m := range c.VolumeMounts {
		if m.SubPath != "" {
			t.Errorf("volume %s is mounted with subPath: a rotated Secret would never reach the pod", m.Name)
		}
	}
	if got := arg(c.Args, "shutdown-delay"); got == "" || pod.TerminationGracePeriodSeconds == nil {
		t.Errorf("--shutdown-delay %q, grace period %v", got, pod.TerminationGracePeriodSeconds)
	}
}

// Values that cannot work are refused with a message saying why.
func TestChartRefusesBadValues(t *testing.T) {
	home := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"service monitor without its CRD", []string{"--set", "serviceMonitor.enabled=true"}, "no monitoring.coreos.com/v1 ServiceMonitor"},
		{"file with two sources", []string{"--set", "files.policy.secret=a", "--set", "files.policy.configMap=b", "--set", "files.policy.key=k"}, "exactly one of secret, configMap and inline"},
		{"file without key", []string{"--set", "files.signing-key.secret=a"}, "key (the Secret's or ConfigMap's key holding the file) is required"},
		{"cache as large as the limit", []string{"--set", "memory.cachePercent=90"}, "/memory/cachePercent': maximum: got 90, want 70"},
		{"soft limit under the cache", []string{"--set", "memory.goMemLimitPercent=40"}, "goMemLimitPercent above cachePercent"},
		{"misspelt option", []string{"--set", "serve.provider-templat=x"}, "additional properties 'provider-templat' not allowed"},
		{"file of no option", []string{"--set", "files.tls-cert.secret=a"}, "additional properties 'tls-cert' not allowed"},
		{"nothing to serve", []string{"--set", "serve.provider-template="}, "there is nothing to serve"},
		{"routes without a gateway", []string{"--set", "gateway.tlsRoute.enabled=true"}, "give gateway.parentRefs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := helm(t, home, append([]string{"template", "t", chartDir, "--set", "serve.provider-template=r.example/${namespace}/${type}"}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("want an error with %q, got %v", c.want, err)
			}
		})
	}
}

// chartSets are the serve options the chart sets itself, from other
// values; notForPods are those a server in a pod has no use for.
var (
	chartSets  = []string{"listen", "tls-cert", "tls-key", "insecure-no-tls", "cache-bytes", "shutdown-delay", "shutdown-timeout"}
	notForPods = []string{"check", "json", "check-provider", "check-module", "password-stdin", "self-signed", "self-signed-cert-out", "self-signed-host", "help"}
	fileFlags  = []string{"signing-key", "auth-token-file", "url-signing-key-file", "notifications-secret-file", "events-file", "ca-file", "policy", "config", "require-attestation", "attest-key", "pull-through-tofu-key", "trusted-root"}
)

// Every option of `oci-tofu serve` (from its --help) is a key of the
// chart's serve values, a file option (files), or set by the chart; and
// every key of serve is an option.
func TestChartCoversEveryServeOption(t *testing.T) {
	_, help, ok := strings.Cut(mustRun(t, "serve", "--help"), "\nOPTIONS:\n")
	if !ok {
		t.Fatal("serve --help has no OPTIONS section")
	}
	var options []string
	for _, m := range regexp.MustCompile(`(?m)^   --([a-z0-9-]+)`).FindAllStringSubmatch(help, -1) {
		options = append(options, m[1])
	}
	var values struct{ Serve map[string]any }
	if err := yaml.Unmarshal(readBoundedFile(t, filepath.Join(testenv.Root(t), chartDir, "values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	covered := map[string]string{}
	for k := range values.Serve {
		covered[k] = "values serve"
	}
	for _, list := range []struct {
		names []string
		by    string
	}{{chartSets, "the chart"}, {notForPods, "not for pods"}, {fileFlags, "values files"}} {
		for _, k := range list.names {
			if by, dup := covered[k]; dup {
				t.Errorf("--%s is both in %s and %s", k, by, list.by)
			}
			covered[k] = list.by
		}
	}
	for _, o := range options {
		if covered[o] == "" {
			t.Errorf("serve --%s is not covered by the chart (values.yaml serve or files)", o)
		}
		delete(covered, o)
	}
	for k, by := range covered {
		t.Errorf("%s names --%s, which serve does not have", by, k)
	}
	// The schema admits exactly these serve and files keys.
	var schema struct {
		Properties struct {
			Serve, Files struct{ Properties map[string]any }
		}
	}
	if err := yaml.Unmarshal(readBoundedFile(t, filepath.Join(testenv.Root(t), chartDir, "values.schema.json")), &schema); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedKeys(schema.Properties.Serve.Properties), sortedKeys(values.Serve); !slices.Equal(got, want) {
		t.Errorf("values.schema.json serve properties %v, values.yaml serve %v", got, want)
	}
	if got, want := sortedKeys(schema.Properties.Files.Properties), slices.Sorted(slices.Values(fileFlags)); !slices.Equal(got, want) {
		t.Errorf("values.schema.json files properties %v, want %v", got, want)
	}
	// Each file option renders as --FLAG=PATH of a mounted volume.
	args := []string{"template", "t", chartDir, "--set", "serve.provider-template=r.example/${namespace}/${type}"}
	for _, f := range fileFlags {
		args = append(args, "--set", "files."+f+".secret=s-"+f, "--set", "files."+f+".key=k")
	}
	c := decodeStrict(t, mustHelm(t, t.TempDir(), args...)).container(t)
	for _, f := range fileFlags {
		p := arg(c.Args, f)
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath+"/k" == p }) {
			t.Errorf("--%s=%q is not a file of a mounted volume %v", f, p, c.VolumeMounts)
		}
	}
}

// The committed deploy/kubernetes.yaml is the chart rendered with
// deploy/kubernetes-values.yaml (`make kubernetes-yaml`).
func TestKubernetesYAMLIsTheChartRendered(t *testing.T) {
	out := mustHelm(t, t.TempDir(), "template", "oci-tofu", chartDir, "--namespace", "oci-tofu", "-f", "deploy/kubernetes-values.yaml")
	committed := string(readBoundedFile(t, filepath.Join(testenv.Root(t), "deploy", "kubernetes.yaml")))
	_, body, ok := strings.Cut(committed, "\n---\n")
	if !ok || "---\n"+body != out {
		t.Errorf("deploy/kubernetes.yaml is not the chart's rendering: run `make kubernetes-yaml`")
	}
	decodeStrict(t, committed)
}

// The packaged chart is pushed to a registry (real Distribution over TLS,
// with a login), and rendered from there as from the checkout.
func TestChartPushedToARegistry(t *testing.T) {
	reg := testenv.StartRegistryWithAuth(t, "chart-user", "chart-Pa55")
	home, out := t.TempDir(), t.TempDir()
	mustHelm(t, home, "package", chartDir, "--destination", out)
	pkg := filepath.Join(out, "oci-tofu-0.1.0.tgz")
	cmd := exec.Command(testenv.Tool(t, "helm"), "registry", "login", reg.Host, "--username", reg.Username, "--password-stdin", "--ca-file", reg.CA.CertFile)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_REGISTRY_CONFIG="+filepath.Join(home, "registry.json"))
	cmd.Stdin = strings.NewReader(reg.Password)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helm registry login: %v\n%s", err, b)
	}
	pushed := mustHelm(t, home, "push", pkg, "oci://"+reg.Host+"/charts", "--ca-file", reg.CA.CertFile)
	t.Logf("helm push: %s", pushed)
	values := filepath.Join(chartDir, "ci", "full-values.yaml")
	local := mustHelm(t, home, "template", "t", chartDir, "-f", values, "--api-versions", serviceMonitorAPI)
	remote := mustHelm(t, home, "template", "t", "oci://"+reg.Host+"/charts/oci-tofu", "--version", "0.1.0", "--ca-file", reg.CA.CertFile,
		"-f", values, "--api-versions", serviceMonitorAPI)
	if remote != local {
		t.Errorf("the chart rendered from the registry differs from the checkout's")
	}
	decodeStrict(t, remote)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// serve.module-template is a list (the templates merged in order,
// docs/proxy.md) or, as before, one string; both render as flags.
func TestChartModuleTemplates(t *testing.T) {
	home := t.TempDir()
	for _, c := range []struct {
		set  []string
		want []string
	}{
		{[]string{"serve.module-template[0]=a.example/m/${namespace}/${name}/${system}", "serve.module-template[1]=b.example/${system}/${namespace}/${name}"},
			[]string{"--module-template=a.example/m/${namespace}/${name}/${system}", "--module-template=b.example/${system}/${namespace}/${name}"}},
		{[]string{"serve.module-template=a.example/m/${namespace}/${name}/${system}"}, []string{"--module-template=a.example/m/${namespace}/${name}/${system}"}},
	} {
		args := []string{"template", "t", chartDir}
		for _, s := range c.set {
			args = append(args, "--set", s)
		}
		var got []string
		for _, a := range decodeStrict(t, mustHelm(t, home, args...)).container(t).Args {
			if strings.HasPrefix(a, "--module-template=") {
				got = append(got, a)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%v: module template flags %v, want %v", c.set, got, c.want)
		}
	}
}
