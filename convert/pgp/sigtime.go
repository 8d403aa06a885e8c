package pgp

import (
	"bytes"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// SignatureTime is when a binary detached signature says it was made (its
// first signature packet's creation time), the zero time when sig holds
// no signature packet it can read. It verifies nothing: it dates what was
// verified already, such as a release's SHA256SUMS signature, so that what
// is made from the release (its SBOMs) is dated by the release and comes
// out the same each time.
func SignatureTime(sig []byte) (t time.Time) {
	defer func() {
		if recover() != nil {
			t = time.Time{}
		}
	}()
	p, err := packet.Read(bytes.NewReader(sig))
	if err != nil {
		return time.Time{}
	}
	if s, ok := p.(*packet.Signature); ok {
		return s.CreationTime.UTC()
	}
	return time.Time{}
}
