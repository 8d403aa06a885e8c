package pullthrough

import (
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/protocol/modulesource"
)

// Module pull-through needs somewhere to store modules (the proxy's
// module template), and is enough on its own.
func TestOptionsCheckModules(t *testing.T) {
	f, err := modulesource.New(modulesource.Config{Registry: "registry.opentofu.org", Sources: []string{"github.com"}})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Modules: []*modulesource.Fetcher{f}}
	if err := o.Check(false, false, false); err == nil || !strings.Contains(err.Error(), "module template") {
		t.Errorf("without a module template: %v", err)
	}
	if err := o.Check(false, false, true); err != nil {
		t.Errorf("with a module template: %v", err)
	}
	if err := (&Options{}).Check(true, true, true); err == nil || !strings.Contains(err.Error(), "module origin") {
		t.Errorf("no origin at all: %v", err)
	}
	if _, err := modulesource.New(modulesource.Config{Registry: "registry.opentofu.org", Sources: []string{"https://github.com/x"}}); err == nil {
		t.Errorf("a source host written as a URL was accepted")
	}
}

// Several origin module registries may be given, each once; the first is
// the origin of the proxy's own module addresses.
func TestOptionsCheckModuleOrigins(t *testing.T) {
	var fs []*modulesource.Fetcher
	for _, host := range []string{"registry.opentofu.org", "registry.terraform.io", "registry.opentofu.org"} {
		f, err := modulesource.New(modulesource.Config{Registry: host, Sources: []string{"github.com"}})
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	if err := (&Options{Modules: fs[:2]}).Check(false, false, true); err != nil {
		t.Errorf("two origins: %v", err)
	}
	if err := (&Options{Modules: fs}).Check(false, false, true); err == nil || !strings.Contains(err.Error(), "once") {
		t.Errorf("an origin given twice: %v", err)
	}
	e := &Engine{opts: Options{Modules: fs[:2]}}
	if got := e.ModuleOrigins(); len(got) != 2 || got[0] != "registry.opentofu.org" || got[1] != "registry.terraform.io" || e.ModuleOrigin() != got[0] {
		t.Errorf("origins %v, first %s", got, e.ModuleOrigin())
	}
	if _, err := e.moduleFetcher("elsewhere.example"); err == nil {
		t.Error("an origin not configured has a fetcher")
	}
	if (*Engine)(nil).ModuleOrigins() != nil {
		t.Error("no engine, yet module origins")
	}
}
