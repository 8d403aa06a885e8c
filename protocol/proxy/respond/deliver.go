package respond

import (
	"errors"
	"net/http"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Deliver answers with a blob a source handed over (deliver.Deliverer).
func (s *Responder) Deliver(w http.ResponseWriter, r *http.Request, b *source.Blob) {
	s.delivery.Deliver(w, r, b)
}

// LeftOut is nil when a listing may leave out version v (of what, named)
// for err — it is denied, gone, or not a valid artifact of its kind —,
// logging why; otherwise err, which fails the listing.
func (s *Responder) LeftOut(what string, v names.Version, err error) error {
	if err == nil {
		return nil
	}
	var d *source.Denied
	switch {
	case errors.As(err, &d):
		s.Log.Info("version left out", "what", what, "version", v.String(), "rule", d.Rule, "reason", d.Reason)
		return nil
	case source.Absent(err), store.Skippable(err):
		return nil
	}
	return err
}
