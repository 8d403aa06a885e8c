package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// programsRun finds the programs the test code runs: by name from PATH,
// by absolute path, and the tools `make tools` builds (testenv.Tool).
func programsRun(t *testing.T, root string) (fromPath, paths, tools map[string][]string) {
	t.Helper()
	fromPath, paths, tools = map[string][]string{}, map[string][]string{}, map[string][]string{}
	byName := []*regexp.Regexp{
		regexp.MustCompile(`exec\.LookPath\("([^"]+)"\)`),
		regexp.MustCompile(`exec\.Command(?:Context)?\((?:ctx, )?"([^"]+)"`),
	}
	byPath := regexp.MustCompile(`"(/usr/(?:s?bin|lib)/[^"]+)"`)
	byTool := regexp.MustCompile(`Tool\(\w+, "([^"]+)"\)`)
	for _, dir := range []string{"e2e", "internal/testenv", "bench", "cmd/oci-tofu", "convert", "oci", "protocol"} {
		filepath.WalkDir(filepath.Join(root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			for _, re := range byName {
				for _, m := range re.FindAllStringSubmatch(string(b), -1) {
					fromPath[m[1]] = append(fromPath[m[1]], rel)
				}
			}
			for _, m := range byPath.FindAllStringSubmatch(string(b), -1) {
				paths[m[1]] = append(paths[m[1]], rel)
			}
			for _, m := range byTool.FindAllStringSubmatch(string(b), -1) {
				tools[m[1]] = append(tools[m[1]], rel)
			}
			return nil
		})
	}
	return fromPath, paths, tools
}

// makeVariable reads `NAME := value` from the Makefile.
func makeVariable(t *testing.T, makefile, name string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `\s*:?=\s*(.*)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatalf("the Makefile sets no %s", name)
	}
	return strings.Fields(m[1])
}

// makePrerequisites reads the prerequisites of a rule.
func makePrerequisites(t *testing.T, makefile, target string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:([^=\n]*)$`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatalf("the Makefile has no rule %s", target)
	}
	return strings.Fields(m[1])
}

// makeRecipe reads the recipe lines (tab-indented) of a rule.
func makeRecipe(t *testing.T, makefile, target string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:[^=\n]*\n((?:\t.*\n)*)`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatalf("the Makefile has no rule %s", target)
	}
	return m[1]
}

// A fresh machine: `make test` installs every Debian package whose
// programs the tests run (tools-apt), and builds every other tool (make
// tools); `make demo` builds only what the demo uses. Terraform is the
// one exception: it comes with the machine (it cannot be built here).
func TestMakeInstallsWhatTestsRun(t *testing.T) {
	root := testenv.Root(t)
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	makefile := string(b)
	apt := map[string]bool{}
	for _, p := range makeVariable(t, makefile, "APT_PACKAGES") {
		apt[p] = true
	}
	testPrereqs := makePrerequisites(t, makefile, "test")
	for _, want := range []string{"tools", "tools-apt"} {
		if !strings.Contains(" "+strings.Join(testPrereqs, " ")+" ", " "+want+" ") {
			t.Errorf("make test does not depend on %s: %v", want, testPrereqs)
		}
	}

	fromPath, paths, tools := programsRun(t, root)
	comesWithMachine := map[string]bool{"go": true, "terraform": true}
	var names []string
	for n := range fromPath {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if comesWithMachine[name] {
			continue
		}
		bin, err := exec.LookPath(name)
		if err != nil {
			t.Errorf("%s (run by %v) is not installed", name, fromPath[name])
			continue
		}
		checkPackaged(t, bin, apt, fromPath[name])
	}
	for p, users := range paths {
		checkPackaged(t, p, apt, users)
	}
	built := makePrerequisites(t, makefile, "tools")
	for tool, users := range tools {
		if !strings.Contains(strings.Join(built, " "), "$(TOOLS)/"+tool) {
			t.Errorf("testenv.Tool %q (used by %v) is not built by `make tools`: %v", tool, users, built)
		}
	}
	// Each tool `go install`ed from the module proxy is pinned: its rule
	// names a version variable the Makefile sets to a release (a fresh
	// machine builds what the tests were written against).
	for _, target := range built {
		rule := makeRecipe(t, makefile, target)
		m := regexp.MustCompile(`\$\(GO\) install \S+@\$\((\w+)\)`).FindStringSubmatch(rule)
		if strings.Contains(rule, "$(GO) install") && m == nil {
			t.Errorf("%s is installed without a pinned version:\n%s", target, rule)
			continue
		}
		if m != nil {
			if v := makeVariable(t, makefile, m[1]); len(v) != 1 || !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(v[0]) {
				t.Errorf("%s pins %s = %v, not a release version", target, m[1], v)
			}
		}
	}

	// make demo: the binary, nothing else; the script finds OpenTofu
	// (TOFU, PATH) or builds it with make's own rule.
	demo := makePrerequisites(t, makefile, "demo")
	if strings.Join(demo, " ") != "build" {
		t.Errorf("make demo builds %v; the demo needs only build (and finds or builds tofu itself)", demo)
	}
	script, err := os.ReadFile(filepath.Join(root, "scripts", "demo.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"/registry", "/crane", "/regctl"} {
		if strings.Contains(string(script), ".tools/bin"+tool) {
			t.Errorf("scripts/demo.sh uses %s, which make demo does not build", tool)
		}
	}
}

// checkPackaged checks that the Debian package holding bin is in
// APT_PACKAGES or essential (always installed).
func checkPackaged(t *testing.T, bin string, apt map[string]bool, users []string) {
	t.Helper()
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Errorf("%s (used by %v): %v", bin, users, err)
		return
	}
	// dpkg knows a file by the path its package ships, before or after
	// the /usr merge.
	var out []byte
	for _, p := range []string{real, bin, strings.Replace(real, "/usr/bin/", "/bin/", 1), strings.Replace(real, "/usr/sbin/", "/sbin/", 1)} {
		if out, err = exec.Command("dpkg", "-S", p).Output(); err == nil {
			break
		}
	}
	if err != nil {
		t.Errorf("%s (used by %v) belongs to no Debian package: install it from one listed in APT_PACKAGES", bin, users)
		return
	}
	pkg, _, _ := strings.Cut(strings.TrimSpace(string(out)), ":")
	pkg = strings.TrimSpace(strings.Split(pkg, ",")[0])
	if apt[pkg] {
		return
	}
	essential, _ := exec.Command("dpkg-query", "-W", "-f=${Essential}", pkg).Output()
	if strings.TrimSpace(string(essential)) == "yes" {
		return
	}
	t.Errorf("%s (used by %v) comes from the Debian package %q, which the Makefile's APT_PACKAGES lacks: a fresh machine would not have it", bin, users, pkg)
}
