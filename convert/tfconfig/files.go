package tfconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
)

// MaxConfigFile bounds one configuration, test or modules.json file.
const MaxConfigFile = 16 << 20

// moduleFiles are a module directory's configuration files, split as the
// clients split them: primary files first, override files (override.tf,
// *_override.tf) merged over them, and test files.
type moduleFiles struct {
	primary, override, tests []string
}

// The configuration file extensions, longest first so that ".tf.json" is
// not taken for ".json".
var (
	tfExts   = []string{".tftest.json", ".tftest.hcl", ".tf.json", ".tf"}
	tofuExts = []string{".tofutest.json", ".tofutest.hcl", ".tofu.json", ".tofu"}
)

// configExt is the configuration extension of a file name for client c,
// or "" when c does not read the file.
func configExt(name string, c Client) string {
	for _, ext := range tfExts {
		if strings.HasSuffix(name, ext) {
			return ext
		}
	}
	if c.readsTofuFiles() {
		for _, ext := range tofuExts {
			if strings.HasSuffix(name, ext) {
				return ext
			}
		}
	}
	return ""
}

func isTestExt(ext string) bool { return strings.Contains(ext, "test.") }

// ignoredFile reports the editor and hidden files both clients skip.
func ignoredFile(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") ||
		strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#")
}

// listModuleFiles lists dir's configuration files as the client does (OpenTofu's
// parser_config_dir.go): sub-directories and ignored files skipped, a .tofu
// file hiding the .tf file of the same name, and, when withTests, test
// files from dir and from dir/tests.
func listModuleFiles(dir string, c Client, withTests bool) (moduleFiles, error) {
	var mf moduleFiles
	entries, err := os.ReadDir(dir)
	if err != nil {
		return mf, err
	}
	for _, e := range entries {
		name := e.Name()
		ext := configExt(name, c)
		if e.IsDir() || ext == "" || ignoredFile(name) {
			continue
		}
		full := filepath.Join(dir, name)
		base := strings.TrimSuffix(name, ext)
		switch {
		case isTestExt(ext):
			if withTests {
				mf.tests = append(mf.tests, full)
			}
		case base == "override" || strings.HasSuffix(base, "_override"):
			mf.override = append(mf.override, full)
		default:
			mf.primary = append(mf.primary, full)
		}
	}
	if withTests {
		mf.tests = append(mf.tests, listTestDir(filepath.Join(dir, "tests"), c)...)
	}
	mf.primary = withoutShadowedTf(mf.primary)
	mf.override = withoutShadowedTf(mf.override)
	mf.tests = withoutShadowedTf(mf.tests)
	return mf, nil
}

// listTestDir lists the test files of the default test directory; a missing
// directory is no error.
func listTestDir(dir string, c Client) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if ext := configExt(e.Name(), c); !e.IsDir() && ext != "" && isTestExt(ext) && !ignoredFile(e.Name()) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// withoutShadowedTf drops a .tf-family file when the .tofu-family file of the
// same name is present (OpenTofu's filterTfPathsWithTofuAlternatives).
func withoutShadowedTf(paths []string) []string {
	var out []string
	for _, p := range paths {
		shadowed := false
		for _, ext := range tfExts {
			if stem, ok := strings.CutSuffix(p, ext); ok {
				shadowed = slices.Contains(paths, stem+strings.Replace(ext, ".tf", ".tofu", 1))
				break
			}
		}
		if !shadowed {
			out = append(out, p)
		}
	}
	return out
}

// parseFile parses one file, native syntax or JSON by its name, reading at
// most MaxConfigFile bytes.
func parseFile(p *hclparse.Parser, path string) (*hcl.File, hcl.Diagnostics) {
	src, err := localfile.ReadBounded(path, MaxConfigFile)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Failed to read file",
			Detail:   fmt.Sprintf("The configuration file %q could not be read: %v.", path, err),
		}}
	}
	if strings.HasSuffix(path, ".json") {
		return p.ParseJSON(src, path)
	}
	return p.ParseHCL(src, path)
}
