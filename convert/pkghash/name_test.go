package pkghash

import (
	"strings"
	"testing"
)

// TestCleanEntryName: the one name rule tar (module sources) and zip
// (provider and module packages) entries share.
func TestCleanEntryName(t *testing.T) {
	for name, want := range map[string]string{
		"main.tf": "main.tf", "./a//b/": "a/b", "a/./b": "a/b", ".": "", "./": "", "": "",
	} {
		if got, err := CleanEntryName(name); err != nil || got != want {
			t.Errorf("CleanEntryName(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	for name, why := range map[string]string{
		"../x": "leaves the tree", "a/../b": "leaves the tree", "a/..": "leaves the tree",
		"/etc/passwd": "absolute", "C:x": "absolute", "1:x": "absolute", ":x": "", "a\\b": "unsafe", "a\x00b": "unsafe",
	} {
		_, err := CleanEntryName(name)
		if why == "" {
			if err != nil {
				t.Errorf("CleanEntryName(%q): %v", name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), why) || !strings.HasPrefix(err.Error(), "entry ") {
			t.Errorf("CleanEntryName(%q): error %v, want one saying %q", name, err, why)
		}
		if _, err := CleanZipName(name); err == nil || !strings.HasPrefix(err.Error(), "zip entry ") {
			t.Errorf("CleanZipName(%q): error %v, want a zip entry error", name, err)
		}
	}
	for _, name := range []string{".", "./", ""} {
		if _, err := CleanZipName(name); err == nil || !strings.Contains(err.Error(), "names no file") {
			t.Errorf("CleanZipName(%q): error %v, want names no file", name, err)
		}
	}
}
