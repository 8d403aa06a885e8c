package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// Change is what one notification says changed: a repository's tags, on
// a registry host when the notification names it ("" when it does not:
// Harbor's repository names and zot's carry none).
type Change struct {
	Host       string
	Repository string
	// Tag is the tag pushed or deleted; "" (or a digest) when the
	// manifest was pushed or deleted by digest.
	Tag string
	// Deleted is a delete: by digest, it may have removed any tag.
	Deleted bool
}

// MaxEvents bounds the events one request may carry.
const MaxEvents = 1000

// ErrTooMany is a request of more than MaxEvents events.
var ErrTooMany = fmt.Errorf("more than %d events in one request", MaxEvents)

// BadRequestError is a body that is none of the formats read.
type BadRequestError struct{ Reason string }

func (e *BadRequestError) Error() string { return "bad notification: " + e.Reason }

func bad(format string, args ...any) error {
	return &BadRequestError{Reason: fmt.Sprintf(format, args...)}
}

// Parse reads the changes a request's body reports, in whichever of the
// formats read it is: a CNCF Distribution envelope of events, a Harbor
// webhook, or a CloudEvent (zot's, or Harbor's CloudEvents format),
// structured (application/cloudevents+json, or a batch) or binary (the
// event's attributes in Ce- headers, its data the body). Events that do
// not change tags (pulls, lint failures, scans) are left out.
func Parse(h http.Header, body []byte) ([]Change, error) {
	if t := h.Get("Ce-Type"); t != "" {
		return cloudEventChanges(t, body)
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, bad("empty body")
	}
	if media, _, _ := mime.ParseMediaType(h.Get("Content-Type")); media == "application/cloudevents-batch+json" || body[0] == '[' {
		return cloudEventBatch(body)
	}
	var probe struct {
		Events      json.RawMessage `json:"events"`
		EventData   json.RawMessage `json:"event_data"`
		SpecVersion string          `json:"specversion"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		return nil, bad("not JSON: %v", err)
	}
	switch {
	case probe.SpecVersion != "":
		return structuredCloudEvent(body)
	case probe.Events != nil:
		return distributionChanges(probe.Events)
	case probe.EventData != nil:
		return harborChanges(body)
	}
	return nil, bad(`neither a Distribution envelope ("events"), a Harbor webhook ("event_data") nor a CloudEvent ("specversion")`)
}

// distributionEvent is what the proxy reads of one CNCF Distribution
// notification event.
type distributionEvent struct {
	Action string `json:"action"`
	Target struct {
		Repository string `json:"repository"`
		Tag        string `json:"tag"`
		URL        string `json:"url"`
	} `json:"target"`
	Request struct {
		Host string `json:"host"`
	} `json:"request"`
}

func distributionChanges(raw json.RawMessage) ([]Change, error) {
	var events []distributionEvent
	if err := decodeBounded(raw, &events); err != nil {
		return nil, err
	}
	var out []Change
	for _, e := range events {
		if e.Action != "push" && e.Action != "delete" || e.Target.Repository == "" {
			continue // pulls and mounts change no tag
		}
		host := e.Request.Host
		if host == "" {
			host = urlHost(e.Target.URL)
		}
		out = append(out, Change{Host: host, Repository: e.Target.Repository, Tag: e.Target.Tag, Deleted: e.Action == "delete"})
	}
	return out, nil
}

// decodeBounded decodes a JSON array (or null) of at most MaxEvents
// elements, one element at a time: a longer one is refused as soon as
// its element MaxEvents+1 begins, before the rest are decoded (a 1 MiB
// body of tiny elements would otherwise cost fifty times that).
func decodeBounded[T any](raw []byte, into *[]T) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return bad("events are not a JSON array: %v", err)
	}
	if tok == nil {
		*into = nil
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return bad("events are not a JSON array")
	}
	var out []T
	for dec.More() {
		if len(out) == MaxEvents {
			return ErrTooMany
		}
		var v T
		if err := dec.Decode(&v); err != nil {
			return decodeError(err, "event %d", len(out)+1)
		}
		out = append(out, v)
	}
	if _, err := dec.Token(); err != nil {
		return bad("events are not a JSON array: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return bad("events are not a JSON array: data after it")
	}
	*into = out
	return nil
}

// decodeError is err, from decoding what context names, as a bad
// request; ErrTooMany stays itself.
func decodeError(err error, context string, args ...any) error {
	if errors.Is(err, ErrTooMany) {
		return ErrTooMany
	}
	return bad("%s: %v", fmt.Sprintf(context, args...), err)
}

// harborPayload is what the proxy reads of a Harbor webhook (its
// default payload format) and of the data of Harbor's CloudEvents.
type harborPayload struct {
	Type      string     `json:"type"`
	EventData harborData `json:"event_data"`
}

type harborData struct {
	Resources  harborResources `json:"resources"`
	Repository struct {
		RepoFullName string `json:"repo_full_name"`
	} `json:"repository"`
}

// harborResources are an event's artifacts, at most MaxEvents of them
// (decodeBounded).
type harborResources []harborResource

type harborResource struct {
	Tag         string `json:"tag"`
	ResourceURL string `json:"resource_url"`
}

// UnmarshalJSON decodes at most MaxEvents resources.
func (r *harborResources) UnmarshalJSON(b []byte) error {
	return decodeBounded(b, (*[]harborResource)(r))
}

func harborChanges(body []byte) ([]Change, error) {
	var p harborPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, decodeError(err, "a Harbor webhook")
	}
	switch p.Type {
	case "PUSH_ARTIFACT", "DELETE_ARTIFACT":
		return p.EventData.changes(p.Type == "DELETE_ARTIFACT")
	}
	return nil, nil // scans, pulls, quotas, replication reports
}

// changes are the tags a Harbor event's resources name, or the
// repository alone when it names none.
func (d harborData) changes(deleted bool) ([]Change, error) {
	repo := d.Repository.RepoFullName
	if repo == "" {
		return nil, bad("a Harbor artifact event without event_data.repository.repo_full_name")
	}
	if len(d.Resources) > MaxEvents {
		return nil, ErrTooMany
	}
	var out []Change
	for _, r := range d.Resources {
		out = append(out, Change{Host: resourceHost(r.ResourceURL), Repository: repo, Tag: r.Tag, Deleted: deleted})
	}
	if len(out) == 0 {
		out = append(out, Change{Repository: repo, Deleted: deleted})
	}
	return out, nil
}

// resourceHost is the registry host of a Harbor resource_url
// ("harbor.example.com/library/app:1.0"), "" when it names none.
func resourceHost(u string) string {
	host, _, ok := strings.Cut(u, "/")
	if !ok || !strings.ContainsAny(host, ".:") && host != "localhost" {
		return ""
	}
	return host
}

func urlHost(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Host
}

// cloudEvent is what the proxy reads of a structured CloudEvent.
type cloudEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

func structuredCloudEvent(body []byte) ([]Change, error) {
	var e cloudEvent
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, bad("a CloudEvent: %v", err)
	}
	return cloudEventChanges(e.Type, e.Data)
}

func cloudEventBatch(body []byte) ([]Change, error) {
	var events []cloudEvent
	if err := decodeBounded(body, &events); err != nil {
		return nil, err
	}
	var out []Change
	for _, e := range events {
		c, err := cloudEventChanges(e.Type, e.Data)
		if err != nil {
			return nil, err
		}
		if len(out)+len(c) > MaxEvents {
			return nil, ErrTooMany
		}
		out = append(out, c...)
	}
	return out, nil
}

// cloudEventChanges reads a CloudEvent's data by its type: zot's
// (zotregistry.image.updated, .image.deleted, .repository.created, or
// those suffixes after the prefix its typePrefix sets), with the
// repository as data.name and the tag or digest as data.reference; or
// Harbor's (harbor.artifact.pushed, .deleted), with the data of its
// default format.
func cloudEventChanges(typ string, data json.RawMessage) ([]Change, error) {
	switch {
	case hasSuffix(typ, ".image.updated", ".image.deleted", ".repository.created"):
		var d struct {
			Name      string `json:"name"`
			Reference string `json:"reference"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			return nil, bad("the data of a %s event: %v", typ, err)
		}
		if d.Name == "" {
			return nil, bad("a %s event without data.name", typ)
		}
		return []Change{{Repository: d.Name, Tag: d.Reference, Deleted: strings.HasSuffix(typ, ".image.deleted")}}, nil
	case hasSuffix(typ, ".artifact.pushed", ".artifact.deleted"):
		var d harborData
		if err := json.Unmarshal(data, &d); err != nil {
			return nil, decodeError(err, "the data of a %s event", typ)
		}
		return d.changes(strings.HasSuffix(typ, ".artifact.deleted"))
	case typ == "":
		return nil, bad("a CloudEvent without a type")
	}
	return nil, nil
}

func hasSuffix(s string, suffixes ...string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}
