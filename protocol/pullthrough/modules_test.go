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
