package page

import "github.com/oci-tofu/oci-tofu/protocol/events/webhook"

// webhooksView is the page's section of webhook deliveries (with an
// events file): the last ones ended, the latest first.
type webhooksView struct {
	Deliveries []webhook.Delivery
}

// webhooksView is the section's content; nil without an events file.
func (s *Page) webhooksView() *webhooksView {
	if s.cfg.Deliveries == nil {
		return nil
	}
	return &webhooksView{Deliveries: s.cfg.Deliveries()}
}
