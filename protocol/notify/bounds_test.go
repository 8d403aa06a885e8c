package notify

import (
	"errors"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// allocated is the bytes fn allocates (the test runs alone: not parallel).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A body of MaxBody holding hundreds of thousands of tiny events, or of
// Harbor resources, is refused as too many without decoding them all:
// what Parse allocates stays a few times the body, not 50 to 150 times
// (it was 55 to 158 MiB for these 1 MiB bodies).
func TestManyTinyEventsCostLittle(t *testing.T) {
	list := func(elem string, n int) string { return strings.TrimSuffix(strings.Repeat(elem+",", n), ",") }
	harborEvent := `{"specversion":"1.0","type":"harbor.artifact.pushed","data":{"repository":{"repo_full_name":"a/b"},"resources":[` + list("{}", 999) + `]}}`
	for name, body := range map[string]string{
		"distribution events":      `{"events":[` + list("{}", MaxBody/3-40) + `]}`,
		"cloudevents batch":        `[` + list("{}", MaxBody/3-40) + `]`,
		"harbor resources":         `{"type":"PUSH_ARTIFACT","event_data":{"repository":{"repo_full_name":"a/b"},"resources":[` + list("{}", MaxBody/3-40) + `]}}`,
		"harbor cloudevent batch":  `[` + list(harborEvent, MaxBody/len(harborEvent)-1) + `]`,
		"harbor cloudevent binary": `{"repository":{"repo_full_name":"a/b"},"resources":[` + list("{}", MaxBody/3-40) + `]}`,
	} {
		if len(body) > MaxBody {
			t.Fatalf("%s: the body is %d bytes", name, len(body))
		}
		h := http.Header{}
		if strings.HasSuffix(name, "binary") {
			h.Set("Ce-Type", "harbor.artifact.pushed")
		}
		var err error
		n := allocated(func() { _, err = Parse(h, []byte(body)) })
		if !errors.Is(err, ErrTooMany) {
			t.Errorf("%s: %v, want ErrTooMany", name, err)
		}
		if n > 8<<20 {
			t.Errorf("%s: parsing %d bytes allocated %d MiB", name, len(body), n>>20)
		}
	}
}
