package proxy

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// responder is what every protocol handler reads with and answers with:
// the store, the document cache, verified blob streams, signed archive
// URLs, errors mapped to statuses (errors.go), logs, metrics and the
// page's record of what was served. Handlers of each protocol family
// (providers, modules, TofuDL) hold one; the Server builds it.
type responder struct {
	opts    *Options
	log     *slog.Logger
	metrics *metrics
	seen    *seen
	store   *store.Store
	docs    *cache.Cache[document]
	urls    *urlSigner // nil without client authentication
	// tokenOK checks an Authorization header against the client tokens
	// (nil without client authentication).
	tokenOK func(header string) bool
}

func allowRead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	writeError(w, http.StatusMethodNotAllowed, "only GET and HEAD are supported")
	return false
}

func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encoding the response failed")
		return
	}
	b = append(b, '\n')
	writeEncoded(w, r, b, []string{strconv.Itoa(len(b))})
}

// writeError answers {"errors":[msg]}, the registry protocols' error form.
func writeError(w http.ResponseWriter, status int, msg string) {
	if rec, ok := w.(*recorder); ok && rec.errMsg == "" {
		rec.errMsg = msg
	}
	b, _ := json.Marshal(map[string][]string{"errors": {msg}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(b)+1))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
