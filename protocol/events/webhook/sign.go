package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers (https://www.standardwebhooks.com).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Signature is the webhook-signature header of a message: for each key,
// "v1," and the base64 HMAC-SHA256 of "<id>.<unix seconds>.<body>",
// space-separated.
func Signature(id string, ts time.Time, body []byte, keys [][]byte) string {
	signed := id + "." + strconv.FormatInt(ts.Unix(), 10) + "."
	sigs := make([]string, 0, len(keys))
	for _, k := range keys {
		h := hmac.New(sha256.New, k)
		h.Write([]byte(signed))
		h.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(h.Sum(nil)))
	}
	return strings.Join(sigs, " ")
}

// sign sets the Standard Webhooks headers of a delivery of body, the
// event id's, at ts.
func sign(h http.Header, id string, ts time.Time, body []byte, keys [][]byte) {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, Signature(id, ts, body, keys))
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}
