package page

import (
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// fleetRecord is a replica's record of what it served, as it is
// published for the other replicas (seen_fleet.go). Whatever another
// replica (or anyone able to write to Redis) put there is read back
// through readFleetRecord, which keeps only what has the shape the
// replica itself would have recorded.
type fleetRecord struct {
	V         int             `json:"v"`
	Providers []fleetArtifact `json:"providers,omitempty"`
	Modules   []fleetArtifact `json:"modules,omitempty"`
	Tofu      []string        `json:"tofu,omitempty"`
	Failures  int             `json:"failures,omitempty"`
	Failure   *seenFailure    `json:"failure,omitempty"`
}

type fleetArtifact struct {
	Address  string         `json:"address"`
	Via      []string       `json:"via,omitempty"`
	Last     time.Time      `json:"last"`
	Versions []fleetVersion `json:"versions,omitempty"`
}

type fleetVersion struct {
	Version   string   `json:"version"`
	Platforms []string `json:"platforms,omitempty"`
	Signed    string   `json:"signed,omitempty"`
	// Deprecated is the policy's message (seenVersion.Deprecated).
	Deprecated string `json:"deprecated,omitempty"`
}

// Bounds of a record read back, besides those of the seen record itself.
const (
	fleetRecordVersion = 1
	fleetRecordBytes   = 60 << 10 // under sharedstate's 64 KiB per record
	maxFleetPlatforms  = 64
	maxFleetFailure    = 512 // bytes of the last failure's message
	maxFleetFailures   = 1 << 40
)

// encodeFleetRecord writes v as a record of at most fleetRecordBytes,
// leaving out the least recently served artifacts while it is larger.
func encodeFleetRecord(v seenView) ([]byte, error) {
	rec := fleetRecord{V: fleetRecordVersion, Tofu: v.Tofu, Failures: v.Failures, Failure: v.Failure,
		Providers: fleetArtifacts(v.Providers), Modules: fleetArtifacts(v.Modules)}
	for {
		b, err := json.Marshal(rec)
		if err != nil || len(b) <= fleetRecordBytes {
			return b, err
		}
		if len(rec.Providers) == 0 && len(rec.Modules) == 0 {
			return nil, errors.New("the record of what was served does not fit a shared record")
		}
		rec.Providers = rec.Providers[:len(rec.Providers)*3/4]
		rec.Modules = rec.Modules[:len(rec.Modules)*3/4]
	}
}

// fleetArtifacts are the artifacts as recorded, the most recently
// served first.
func fleetArtifacts(avs []artifactView) []fleetArtifact {
	out := make([]fleetArtifact, 0, len(avs))
	for _, a := range avs {
		fa := fleetArtifact{Address: a.Address, Via: a.Via, Last: a.Last.UTC()}
		for _, sv := range a.Versions {
			fa.Versions = append(fa.Versions, fleetVersion{Version: sv.Version.String(), Platforms: sv.Platforms, Signed: sv.Signed, Deprecated: sv.Deprecated})
		}
		out = append(out, fa)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Last.After(out[j].Last) })
	return out
}

// readFleetRecord reads a record published by another replica: what
// does not parse as the replica would have recorded it (addresses,
// versions, platforms, protocols, failure classes) is left out, and
// every list is bounded as the replica's own record is.
func readFleetRecord(b []byte, now time.Time) (seenView, error) {
	var rec fleetRecord
	if len(b) > fleetRecordBytes {
		return seenView{}, errors.New("record too large")
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return seenView{}, err
	}
	if rec.V != fleetRecordVersion {
		return seenView{}, errors.New("unknown record version")
	}
	v := seenView{
		Providers: readArtifacts(rec.Providers, validProviderAddress, now),
		Modules:   readArtifacts(rec.Modules, validModuleAddress, now),
	}
	for _, id := range rec.Tofu[:min(len(rec.Tofu), maxSeenVersions)] {
		if _, err := names.ParseTofuVersion(id); err == nil && len(id) <= 64 {
			v.Tofu = append(v.Tofu, id)
		}
	}
	if rec.Failures > 0 && rec.Failures <= maxFleetFailures {
		v.Failures = rec.Failures
	}
	if f := rec.Failure; f != nil && validFailureClass(f.Class) && utf8.ValidString(f.What) && len(f.What) <= maxFleetFailure {
		v.Failure = &seenFailure{At: notAfter(f.At, now), Class: f.Class, What: f.What}
	}
	return v, nil
}

// readArtifacts keeps the artifacts whose address is valid, with their
// valid versions and platforms.
func readArtifacts(in []fleetArtifact, valid func(string) bool, now time.Time) []artifactView {
	var out []artifactView
	for _, fa := range in[:min(len(in), maxSeenArtifacts)] {
		if !valid(fa.Address) {
			continue
		}
		av := artifactView{Address: fa.Address, Last: notAfter(fa.Last, now)}
		for _, via := range fa.Via {
			if (via == names.ViaMirror.String() || via == names.ViaRegistry.String()) && !slices.Contains(av.Via, via) {
				av.Via = append(av.Via, via)
			}
		}
		for _, fv := range fa.Versions[:min(len(fa.Versions), maxSeenVersions)] {
			if sv, ok := readFleetVersion(fv); ok {
				av.Versions = append(av.Versions, sv)
			}
		}
		out = append(out, av)
	}
	return out
}

func readFleetVersion(fv fleetVersion) (seenVersion, bool) {
	v, err := names.ParseVersion(fv.Version)
	if err != nil || (fv.Signed != "" && fv.Signed != "yes" && fv.Signed != "no") {
		return seenVersion{}, false
	}
	sv := seenVersion{Version: v, Signed: fv.Signed}
	if policy.ValidMessage(fv.Deprecated) {
		sv.Deprecated = fv.Deprecated
	}
	for _, p := range fv.Platforms[:min(len(fv.Platforms), maxFleetPlatforms)] {
		if pl, err := names.ParsePlatform(p); err == nil && pl.String() == p {
			sv.Platforms = append(sv.Platforms, p)
		}
	}
	return sv, true
}

// validProviderAddress: hostname/namespace/type as the replica records it.
func validProviderAddress(s string) bool {
	p, err := names.ParseProvider(s)
	return err == nil && p.String() == s
}

// validModuleAddress: namespace/name/system as the replica records it.
func validModuleAddress(s string) bool {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return false
	}
	m, err := names.ParseModule(parts[0], parts[1], parts[2])
	return err == nil && m.String() == s
}

// validFailureClass: one of the classes failures are recorded with.
func validFailureClass(s string) bool {
	for f := oci.FailureNone; f <= oci.FailureOther; f++ {
		if f.String() == s {
			return true
		}
	}
	return false
}

// notAfter is t, or now when t is later (another replica's clock, or a
// record made up).
func notAfter(t, now time.Time) time.Time {
	if t.After(now) {
		return now
	}
	return t
}
