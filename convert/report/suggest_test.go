package report

import "testing"

func TestClosest(t *testing.T) {
	cmds := []string{"export", "lock", "mirror", "pull", "push", "serve", "verify", "version"}
	for in, want := range map[string]string{"psuh": "push", "serv": "serve", "lokc": "lock", "xyzzy": "", "verfiy": "verify"} {
		if got := Closest(in, cmds); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
	// Short flags: one swap or edit away is a typo; one letter is not.
	flags := []string{"key", "k", "platform", "unsigned", "h", "help"}
	for in, want := range map[string]string{"kye": "key", "platfrom": "platform", "unsinged": "unsigned", "x": "", "hepl": "help"} {
		if got := Closest(in, flags); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
}
