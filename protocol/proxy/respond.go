package proxy

import (
	"log/slog"

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
}
