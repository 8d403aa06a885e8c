package assistant_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/oci-tofu/oci-tofu/protocol/assistant"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// A Local Get takes the document a catalogue handler handed over: the
// value itself when the caller reads that type, its JSON decoded into
// the caller's type otherwise; a handler that writes bytes is decoded.
func TestLocalTakesTheDocumentHandedOver(t *testing.T) {
	ctx := context.Background()
	page := catalog.ModulePage{Address: "example.com/acme/net/aws", Version: "1.0.0", Versions: []catalog.VersionStatus{{Version: "1.0.0", Status: "served"}}}
	hand := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !catalog.HandOver(r.Context(), page) {
			t.Error("a Local Get's request carries no document to hand over")
		}
		w.WriteHeader(http.StatusOK)
	})
	l := &assistant.Local{Handler: hand, DefaultHost: "proxy.example"}
	var got catalog.ModulePage
	if err := l.Get(ctx, "modules/example.com/acme/net/aws", nil, &got); err != nil || got.Address != page.Address || len(got.Versions) != 1 {
		t.Errorf("the page handed over: %+v %v", got, err)
	}
	var other struct {
		Address string `json:"address"`
	}
	if err := l.Get(ctx, "modules/example.com/acme/net/aws", nil, &other); err != nil || other.Address != page.Address {
		t.Errorf("the page handed over, read as another type: %+v %v", other, err)
	}
	l.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"address":"written"}`))
	})
	if err := l.Get(ctx, "modules/example.com/acme/net/aws", nil, &got); err != nil || got.Address != "written" {
		t.Errorf("a page written: %+v %v", got, err)
	}
}
