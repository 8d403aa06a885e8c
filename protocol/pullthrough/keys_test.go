package pullthrough

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/events"
)

// keyrings are n keys (IDs 1..n) across keyrings of 100, as an origin's
// download answer may list them.
func keyrings(n int) []*pgp.Keyring {
	var out []*pgp.Keyring
	for i := 1; i <= n; i++ {
		if (i-1)%100 == 0 {
			out = append(out, &pgp.Keyring{Name: fmt.Sprint("keys ", i)})
		}
		kr := out[len(out)-1]
		kr.Entities = append(kr.Entities, &openpgp.Entity{PrimaryKey: &packet.PublicKey{KeyId: uint64(i)}})
	}
	return out
}

// An origin listing thousands of keys, and an earlier version's summary
// naming thousands, make an origin.keys-changed event naming at most
// maxEventKeyIDs of each, with the count of the others; the verifying
// key is always among the new ones, whatever its place.
func TestKeysChangedBounded(t *testing.T) {
	signer := pgp.KeyID(4000) // listed, far past the first 100 in order
	c := newKeysCheck("example.com/acme/widgets", names.MustParseVersion("2.0.0"), signer, keyrings(5000))
	if len(c.listed) > maxEventKeyIDs {
		t.Errorf("the check holds %d listed keys, more than %d", len(c.listed), maxEventKeyIDs)
	}
	var old []string
	for i := range 3000 {
		old = append(old, fmt.Sprintf("%016X", 1<<40+i))
	}
	d := keysChangedData(c, old)
	if len(d.OldKeyIDs) != maxEventKeyIDs || d.OldKeyIDsOmitted != 3000-maxEventKeyIDs {
		t.Errorf("old keys: %d named, %d omitted; want %d and %d", len(d.OldKeyIDs), d.OldKeyIDsOmitted, maxEventKeyIDs, 3000-maxEventKeyIDs)
	}
	if len(d.NewKeyIDs) != maxEventKeyIDs || d.NewKeyIDsOmitted != 5000-maxEventKeyIDs || !slices.Contains(d.NewKeyIDs, signer) {
		t.Errorf("new keys: %d named (the signer among them: %v), %d omitted; want %d and %d",
			len(d.NewKeyIDs), slices.Contains(d.NewKeyIDs, signer), d.NewKeyIDsOmitted, maxEventKeyIDs, 5000-maxEventKeyIDs)
	}
	if !slices.IsSorted(d.NewKeyIDs) || !slices.IsSorted(d.OldKeyIDs) {
		t.Errorf("not sorted: %v %v", d.OldKeyIDs, d.NewKeyIDs)
	}
	body, err := events.New("https://proxy.example.com", d).MarshalJSON()
	if err != nil || len(body) > 8<<10 {
		t.Errorf("the event is %d bytes (%v): more than fits an outbox entry comfortably", len(body), err)
	}
	var back events.OriginKeysChanged
	if err := json.Unmarshal(mustData(t, body), &back); err != nil || back.NewKeyIDsOmitted != d.NewKeyIDsOmitted {
		t.Errorf("decoded: %+v, %v", back, err)
	}
}

// A few keys are named all, with no count of others; a signer the
// origin does not list is named among the new ones.
func TestKeysChangedFew(t *testing.T) {
	c := newKeysCheck("example.com/acme/widgets", names.MustParseVersion("2.0.0"), pgp.KeyID(99), keyrings(2))
	d := keysChangedData(c, []string{pgp.KeyID(7)})
	if !slices.Equal(d.OldKeyIDs, []string{pgp.KeyID(7)}) || d.OldKeyIDsOmitted != 0 ||
		!slices.Equal(d.NewKeyIDs, []string{pgp.KeyID(1), pgp.KeyID(2), pgp.KeyID(99)}) || d.NewKeyIDsOmitted != 0 {
		t.Errorf("%+v", d)
	}
}

// mustData is the data of an event's JSON.
func mustData(t *testing.T, body []byte) []byte {
	t.Helper()
	var e struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	return e.Data
}
