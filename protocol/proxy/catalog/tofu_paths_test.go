package catalog

import "testing"

func TestParseTofuPath(t *testing.T) {
	for path, want := range map[string]string{"tofu": "", "tofu/1.9.0": "1.9.0", "tofu/1.10.0-beta1": "1.10.0-beta1", "tofu/2.0.0-rc10": "2.0.0-rc10"} {
		req, err := ParsePath(path)
		got := ""
		if req.Version != nil {
			got = req.Version.String()
		}
		if err != nil || !req.Tofu || got != want || req.Provider != nil || req.Index {
			t.Errorf("%s: %+v %v, want the releases' page at %q", path, req, err, want)
		}
	}
	for _, path := range []string{"tofu/", "tofu/v1.9.0", "tofu/1.9", "tofu/1.9.0+meta", "tofu/1.9.0-dev1", "tofu/1.9.0/x", "tofu/%2e%2e",
		"tofu/1.9.0%2Fx", "tofu/%00", "tofu//", "tofu/1.9.0/"} {
		if req, err := ParsePath(path); err == nil {
			t.Errorf("%s: %+v, want an error", path, req)
		}
	}
	if req, err := ParsePath("tofux"); err == nil || req.Tofu {
		t.Errorf("tofux: %+v %v, want an error", req, err)
	}
}
