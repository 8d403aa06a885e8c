package notify

import (
	"errors"
	"net/http"
	"testing"
)

// FuzzParse feeds Parse arbitrary bodies in each of the formats it tells
// apart: it returns changes or an error it names (a bad request, too
// many events), never panics, and never more than MaxEvents changes.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"events":[{"action":"push","target":{"repository":"acme/a","tag":"1.0.0","url":"https://h:5000/v2/acme/a/manifests/x"},"request":{"host":"h:5000"}}]}`,
		`{"type":"PUSH_ARTIFACT","event_data":{"resources":[{"tag":"1","resource_url":"h.example/a/b:1"}],"repository":{"repo_full_name":"a/b"}}}`,
		`{"specversion":"1.0","type":"zotregistry.image.updated","data":{"name":"a/b","reference":"1.0.0"}}`,
		`[{"specversion":"1.0","type":"harbor.artifact.pushed","data":{"repository":{"repo_full_name":"a/b"},"resources":[{},{}]}}]`,
		`{"name":"a/b","reference":"1"}`, `[]`, `{}`, ``, `[[[[`,
	} {
		f.Add("", "", []byte(seed))
		f.Add("application/cloudevents-batch+json", "", []byte(seed))
		f.Add("", "zotregistry.image.deleted", []byte(seed))
	}
	f.Fuzz(func(t *testing.T, contentType, ceType string, body []byte) {
		h := http.Header{}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		if ceType != "" {
			h.Set("Ce-Type", ceType)
		}
		changes, err := Parse(h, body)
		var br *BadRequestError
		if err != nil && !errors.Is(err, ErrTooMany) && !errors.As(err, &br) {
			t.Fatalf("an error of neither kind: %v", err)
		}
		if len(changes) > MaxEvents {
			t.Fatalf("%d changes from one request", len(changes))
		}
	})
}

// FuzzHeard feeds a replica what anyone able to publish on the Redis
// channel might: it never panics, keeps at most MaxPending names, and
// keeps only invalidations of repositories in its scope.
func FuzzHeard(f *testing.F) {
	for _, seed := range []string{
		`{"from":"x","names":["reg.example/acme/a","reg.example/acme/b:1.0.0","reg.example/acme/c:"]}`,
		`{"from":"x","all":true}`, `{"from":"x","names":["reg.example/acme/a:../../x","/","reg.example/:","a:b/c"]}`,
		`{"names":null}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		r, err := New(Options{Secret: []byte(testSecret), Scope: scopeAcme, Apply: func([]string, bool) {}, MaxPending: 4})
		if err != nil {
			t.Fatal(err)
		}
		r.heard(msg)
		names, tell, _, tellAll := r.take()
		if len(names) > 4 || len(tell) > 0 || tellAll {
			t.Fatalf("names %d, told %d %v", len(names), len(tell), tellAll)
		}
		for _, n := range names {
			if len(r.inScope(n)) != 1 {
				t.Fatalf("%q kept, out of scope", n)
			}
		}
	})
}
