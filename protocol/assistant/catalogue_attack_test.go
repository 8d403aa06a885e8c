package assistant_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/protocol/assistant"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// The in-process hand-over, attacked: a request from the network
// carries no document to hand over (its handler writes JSON), and a
// value handed over that the caller's type cannot take, or that is not
// JSON at all, is an error, never a panic; each Get's document is its
// own, also when Gets nest or run at once.
func TestHandOverHeld(t *testing.T) {
	page := catalog.ModulePage{Address: "example.com/acme/net/aws", Version: "1.0.0"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if catalog.HandOver(r.Context(), page) {
			t.Error("a network request carries a document to hand over")
		}
		_, _ = w.Write([]byte(`{"address":"written"}`))
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/catalog/?format=json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if catalog.HandOver(context.Background(), page) {
		t.Error("a plain context takes a document")
	}

	ctx := context.Background()
	for name, v := range map[string]any{"a channel": make(chan int), "a func": func() {}, "nil": nil, "a string": "text", "a pointer": &page} {
		l := &assistant.Local{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			catalog.HandOver(r.Context(), v)
			w.WriteHeader(http.StatusOK)
		}), DefaultHost: "proxy.example"}
		var got catalog.ModulePage
		err := l.Get(ctx, "modules/x", nil, &got) // must not panic
		if name == "a pointer" && (err != nil || got.Address != page.Address) {
			t.Errorf("%s: %+v %v", name, got, err)
		}
		if (name == "a channel" || name == "a func" || name == "a string") && err == nil {
			t.Errorf("%s handed over read as a page: %+v", name, got)
		}
	}

	// Nested: a handler that itself reads a document in process keeps
	// its own caller's.
	inner := &assistant.Local{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		catalog.HandOver(r.Context(), catalog.ModulePage{Address: "inner"})
		w.WriteHeader(http.StatusOK)
	}), DefaultHost: "proxy.example"}
	outer := &assistant.Local{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in catalog.ModulePage
		if err := inner.Get(r.Context(), "modules/inner", nil, &in); err != nil || in.Address != "inner" {
			t.Errorf("inner: %+v %v", in, err)
		}
		if strings.Contains(r.URL.Path, "refuse") {
			http.Error(w, `{"errors":["no"]}`, http.StatusNotFound)
			return
		}
		catalog.HandOver(r.Context(), catalog.ModulePage{Address: "outer"})
		w.WriteHeader(http.StatusOK)
	}), DefaultHost: "proxy.example"}
	var got catalog.ModulePage
	if err := outer.Get(ctx, "modules/outer", nil, &got); err != nil || got.Address != "outer" {
		t.Errorf("outer: %+v %v", got, err)
	}
	got = catalog.ModulePage{}
	if err := outer.Get(ctx, "modules/refuse", nil, &got); err == nil || got.Address != "" {
		t.Errorf("an outer refusal took the inner document: %+v %v", got, err)
	}
}
