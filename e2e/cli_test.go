package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// exitCode is the exit status of a finished command (0 for success).
func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("not an exit status: %v", err)
	}
	return ee.ExitCode()
}

// Flags may follow the positional arguments of every command, as users
// write them; "--" still ends the flags.
func TestCLIFlagsAfterArguments(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	tpl := reg.Host + "/providers/${namespace}/${type}"
	repo := reg.Host + "/providers/test/hello"
	mustRun(t, "push", "provider", testenv.Testdata(t, "providers", "hello", "1.0.0"), repo,
		"--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), "--platform", "linux_amd64", "--platform=darwin_arm64", "--quiet")

	// export: only the platform asked for, though --platform comes last.
	exp := filepath.Join(t.TempDir(), "exp")
	mustRun(t, "export", "--provider-template", tpl, exp, "example.com/test/hello", "--platform", "linux_amd64")
	zips, _ := filepath.Glob(filepath.Join(exp, "example.com", "test", "hello", "*.zip"))
	if len(zips) != 1 || !strings.HasSuffix(zips[0], "_linux_amd64.zip") {
		t.Errorf("export --platform after the arguments wrote %v", zips)
	}

	// lock DIR --platform …
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(helloConfig, "%s", "1.0.0", 1)})
	out := mustRun(t, "lock", dir, "--platform", "linux_amd64", "--provider-template", tpl)
	if !strings.Contains(out, "example.com/test/hello 1.0.0") {
		t.Errorf("lock: %s", out)
	}

	// verify REF --skip-zips (--json after the argument too).
	out = mustRun(t, "verify", repo+":1.0.0", "--skip-zips", "--json")
	if !strings.Contains(out, `"ok": true`) {
		t.Errorf("verify: %s", out)
	}

	// push module / pull module with flags at the end.
	modRepo := reg.Host + "/modules/greeting"
	mustRun(t, "push", "module", testenv.Testdata(t, "modules", "greeting"), modRepo+":1.0.0", "--also-tag", "latest", "--quiet")
	pulled := filepath.Join(t.TempDir(), "m")
	out = mustRun(t, "pull", "module", modRepo+":latest", pulled, "--json")
	if jsonField(t, out, "dir") != pulled {
		t.Errorf("pull module: %s", out)
	}

	// "--" ends the flags: what follows is an argument, even if it looks like one.
	out, err := run(t, "verify", "--skip-zips", "--", "--json")
	if exitCode(t, err) != 1 || !strings.Contains(out, `invalid reference "--json"`) {
		t.Errorf("verify -- --json: %v\n%s", err, out)
	}
}

// A command line a command cannot take is refused before any work, with
// exit status 1, one line saying what is wrong and the command's synopsis.
func TestCLIUsageErrors(t *testing.T) {
	exp := filepath.Join(t.TempDir(), "exp")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"export", "--provider-template", "localhost:1/p/${namespace}/${type}", exp, "acme/widgets", "--platform", "linux_amd64", "not an address!"},
			[]string{"usage: oci-tofu export [flags] DIR ADDRESS[@CONSTRAINT]..."}},
		{[]string{"lock", "."}, []string{"oci-tofu lock: missing --provider-template", "usage: oci-tofu lock [flags] [DIR]"}},
		{[]string{"lock", ".", "--provider-template", "x.io/${namespace}/${type}"}, []string{"missing --platform"}},
		{[]string{"verify"}, []string{"oci-tofu verify: takes at least 1 argument (REFERENCE...), got 0", "usage: oci-tofu verify [flags] REFERENCE..."}},
		{[]string{"push", "module", "a"}, []string{"oci-tofu push module: takes 2 arguments (SOURCE REPOSITORY:TAG), got 1", "usage: oci-tofu push module [flags] SOURCE REPOSITORY:TAG"}},
		{[]string{"pull", "module", "a", "b", "c"}, []string{"oci-tofu pull module: takes 2 arguments", "usage: oci-tofu pull module [flags] REPOSITORY[:TAG|@DIGEST] DIR"}},
		{[]string{"push", "provider", "dir"}, []string{"usage: oci-tofu push provider [flags] DIR REPOSITORY"}},
		{[]string{"push", "tofu", "dir"}, []string{"usage: oci-tofu push tofu [flags] DIR REPOSITORY"}},
		{[]string{"push", "mirror", "--provider-template", "x.io/${namespace}/${type}"}, []string{"usage: oci-tofu push mirror [flags] DIR"}},
		{[]string{"serve", "extra"}, []string{"oci-tofu serve: takes no arguments", "usage: oci-tofu serve [flags]"}},
		{[]string{"mirror"}, []string{"usage: oci-tofu mirror [flags] ADDRESS[@CONSTRAINT]..."}},
		{[]string{"lock", ".", "--platfrom", "linux_amd64"}, []string{"unknown flag --platfrom; did you mean --platform?", "usage: oci-tofu lock"}},
		{[]string{"psuh", "provider"}, []string{`unknown command "psuh"; did you mean "oci-tofu push"?`}},
		{[]string{"push", "provdier"}, []string{`did you mean "oci-tofu push provider"?`}},
		{[]string{"pull", "modul", "x"}, []string{`did you mean "oci-tofu pull module"?`}},
		// No command is a usage error like an unknown one; help is asked for.
		{[]string{"push"}, []string{"oci-tofu push: missing command", "usage: oci-tofu push COMMAND   (one of: mirror, module, provider, tofu;"}},
		{[]string{"pull"}, []string{"oci-tofu pull: missing command"}},
		{[]string{}, []string{"oci-tofu: missing command", "usage: oci-tofu COMMAND"}},
		{[]string{"push", "provider", "--kye", "k.asc", "dir", "repo"}, []string{"unknown flag --kye; did you mean --key?"}},
	} {
		out, err := run(t, tc.args...)
		if code := exitCode(t, err); code != 1 {
			t.Errorf("%v: exit status %d, want 1\n%s", tc.args, code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
		if strings.Contains(out, "No help topic") || strings.Contains(out, "Incorrect Usage") || strings.Contains(out, "GLOBAL OPTIONS") {
			t.Errorf("%v: urfave/cli's own messages leak:\n%s", tc.args, out)
		}
	}
	if _, err := os.Stat(exp); !os.IsNotExist(err) {
		t.Errorf("export wrote %s before finding a bad argument", exp)
	}
}

// `version` and `--version` print the version; `completion bash` gives a
// script that completes commands and flags from the binary itself.
func TestCLIVersionAndCompletion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if out := mustRun(t, args...); !strings.HasPrefix(out, "oci-tofu version ") {
			t.Errorf("%v: %q", args, out)
		}
	}
	script := mustRun(t, "completion", "bash")
	binDir := filepath.Dir(ociTofu)
	complete := func(line ...string) string {
		t.Helper()
		cmd := exec.Command("bash", "-c", script+`
COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
_oci_tofu_complete
printf '%s\n' "${COMPREPLY[@]}"`, "bash")
		cmd.Args = append(cmd.Args, line...)
		cmd.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("completion of %v: %v\n%s", line, err, out)
		}
		return string(out)
	}
	if got := complete("oci-tofu", "push", "pr"); strings.TrimSpace(got) != "provider" {
		t.Errorf("completing 'push pr': %q", got)
	}
	if got := complete("oci-tofu", "lock", "--pla"); !strings.Contains(got, "--platform") || strings.Contains(got, "--provider-template") {
		t.Errorf("completing 'lock --pla': %q", got)
	}
	if got := complete("oci-tofu", "se"); strings.TrimSpace(got) != "serve" {
		t.Errorf("completing 'se': %q", got)
	}
	if out := mustRun(t, "completion", "fish"); !strings.Contains(out, "complete -c oci-tofu") {
		t.Errorf("fish completion: %s", out)
	}
	if out := mustRun(t, "completion", "zsh"); !strings.Contains(out, "compdef _oci_tofu oci-tofu") {
		t.Errorf("zsh completion: %s", out)
	}
}

// Every command's help fits in 100 columns, flag usages included (they
// were aligned after the longest flag name: lines of over 300 columns).
func TestCLIHelpFitsInAHundredColumns(t *testing.T) {
	var walk func(path []string)
	checked := 0
	walk = func(path []string) {
		out, _ := run(t, append(append([]string(nil), path...), "--help")...)
		checked++
		for i, line := range strings.Split(out, "\n") {
			if len(line) > 100 {
				t.Errorf("oci-tofu %s --help, line %d has %d columns: %q", strings.Join(path, " "), i+1, len(line), line)
			}
		}
		// A command that groups others names them in its usage error.
		bare, _ := run(t, path...)
		if _, list, ok := strings.Cut(bare, "(one of: "); ok {
			list, _, _ = strings.Cut(list, ";")
			for _, name := range strings.Split(list, ", ") {
				walk(append(append([]string(nil), path...), name))
			}
		}
	}
	walk(nil)
	if checked < 15 {
		t.Errorf("only %d commands' help was checked", checked)
	}
}
