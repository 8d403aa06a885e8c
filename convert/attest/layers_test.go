package attest

import (
	"encoding/json"
	"testing"
	"time"
)

func TestIngestTime(t *testing.T) {
	want := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for pred, ok := range map[string]bool{
		`{"attested_at":"2026-11-01T12:00:00Z"}`:                 true,
		`{"verified_at":"2026-11-01T12:00:00Z","version":"1.0"}`: true,
		`{"verified_at":"yesterday"}`:                            false,
		`{}`:                                                     false,
		`[1,2]`:                                                  false,
	} {
		got, gotOK := IngestTime(&Statement{Predicate: json.RawMessage(pred)})
		if gotOK != ok || ok && !got.Equal(want) {
			t.Errorf("IngestTime(%s) = %v, %v", pred, got, gotOK)
		}
	}
	if _, ok := IngestTime(nil); ok {
		t.Error("nil statement")
	}
}
