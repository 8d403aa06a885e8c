package respond

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/audit"
)

// A ticket names an identity, not only a name: a registry user (or an
// operator) named like a policy file client holds a ticket that
// verifies as theirs, never as the client's (whose budget a client
// ticket spends), and a ticket made under another key verifies as
// nothing.
func TestTicketNamesAnIdentity(t *testing.T) {
	u := NewURLSigner([]byte("key-of-the-fleet"), time.Hour)
	query := func(ticket string) url.Values {
		q, err := url.ParseQuery(strings.TrimPrefix(ticket, "&"))
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	for _, c := range []struct {
		ticket, client, kind string
	}{
		{u.ticket(ticketClient, "loop"), "loop", ticketClient},
		{u.ticket(ticketOther, "loop"), "loop", ticketOther},
		{u.ticket(ticketOther, ""), "unknown", ticketOther},
		{NewURLSigner([]byte("another key"), time.Hour).ticket(ticketClient, "loop"), "unknown", ""},
		{"&by=loop", "unknown", ""},
	} {
		who, kind := u.handedTo(query(c.ticket))
		if who.Client != c.client || kind != c.kind || who.Identity != audit.IdentitySignedURL {
			t.Errorf("%s: %+v of kind %q, want %s of kind %q", c.ticket, who, kind, c.client, c.kind)
		}
	}
	if u.ticket(ticketClient, "loop") == u.ticket(ticketOther, "loop") {
		t.Error("a client's ticket and a registry user's of the same name are the same")
	}
}
