package notify

import (
	"net/http"
	"reflect"
	"testing"
)

// Payloads shaped as the registries document them (Distribution's
// notifications envelope, Harbor's webhook payload and its CloudEvents
// format, zot's events extension in binary and structured mode).
func TestParseFormats(t *testing.T) {
	for name, tc := range map[string]struct {
		header http.Header
		body   string
		want   []Change
	}{
		"distribution push, pull and blob": {
			header: http.Header{"Content-Type": {"application/vnd.docker.distribution.events.v1+json"}},
			body: `{"events":[
			 {"id":"1","action":"push","target":{"mediaType":"application/vnd.oci.image.index.v1+json","repository":"acme/hello","tag":"1.2.0","digest":"sha256:aa","url":"https://reg.example:5000/v2/acme/hello/manifests/sha256:aa"},"request":{"host":"reg.example:5000","method":"PUT"}},
			 {"id":"2","action":"pull","target":{"repository":"acme/other","tag":"1.0.0"},"request":{"host":"reg.example:5000"}},
			 {"id":"3","action":"delete","target":{"repository":"acme/gone","digest":"sha256:bb","url":"https://reg.example:5000/v2/acme/gone/manifests/sha256:bb"}}]}`,
			want: []Change{{Host: "reg.example:5000", Repository: "acme/hello", Tag: "1.2.0"}, {Host: "reg.example:5000", Repository: "acme/gone", Deleted: true}},
		},
		"harbor push": {
			header: http.Header{"Content-Type": {"application/json"}},
			body: `{"type":"PUSH_ARTIFACT","occur_at":1680000000,"operator":"admin","event_data":{
			 "resources":[{"digest":"sha256:aa","tag":"1.2.0","resource_url":"harbor.example.com/tofu/hello:1.2.0"}],
			 "repository":{"date_created":1680000000,"name":"hello","namespace":"tofu","repo_full_name":"tofu/hello","repo_type":"private"}}}`,
			want: []Change{{Host: "harbor.example.com", Repository: "tofu/hello", Tag: "1.2.0"}},
		},
		"harbor delete without resources": {
			body: `{"type":"DELETE_ARTIFACT","event_data":{"repository":{"repo_full_name":"tofu/hello"}}}`,
			want: []Change{{Repository: "tofu/hello", Deleted: true}},
		},
		"harbor scan": {
			body: `{"type":"SCANNING_COMPLETED","event_data":{"repository":{"repo_full_name":"tofu/hello"}}}`,
		},
		"harbor cloudevent": {
			header: http.Header{"Content-Type": {"application/cloudevents+json"}},
			body: `{"specversion":"1.0","id":"x","source":"/projects/1/webhook/policies/2","type":"harbor.artifact.pushed","datacontenttype":"application/json",
			 "data":{"resources":[{"tag":"2.0.0","resource_url":"harbor.example.com/tofu/hello:2.0.0"}],"repository":{"repo_full_name":"tofu/hello"}}}`,
			want: []Change{{Host: "harbor.example.com", Repository: "tofu/hello", Tag: "2.0.0"}},
		},
		"zot binary": {
			header: http.Header{"Ce-Specversion": {"1.0"}, "Ce-Type": {"zotregistry.image.updated"}, "Ce-Source": {"zotregistry.dev"}, "Ce-Id": {"1"}, "Content-Type": {"application/json"}},
			body:   `{"name":"tofu/hello","reference":"1.2.0","digest":"sha256:aa","mediaType":"application/vnd.oci.image.index.v1+json","manifest":"{}"}`,
			want:   []Change{{Repository: "tofu/hello", Tag: "1.2.0"}},
		},
		"zot structured with a type prefix": {
			header: http.Header{"Content-Type": {"application/cloudevents+json"}},
			body:   `{"specversion":"1.0","id":"1","source":"https://registry.example.com","type":"com.example.registry.image.deleted","data":{"name":"tofu/hello","reference":"sha256:aa"}}`,
			want:   []Change{{Repository: "tofu/hello", Tag: "sha256:aa", Deleted: true}},
		},
		"zot repository created, in a batch": {
			header: http.Header{"Content-Type": {"application/cloudevents-batch+json"}},
			body:   `[{"specversion":"1.0","type":"zotregistry.repository.created","data":{"name":"tofu/new"}},{"specversion":"1.0","type":"zotregistry.image.lint_failed","data":{"name":"tofu/new"}}]`,
			want:   []Change{{Repository: "tofu/new"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := tc.header
			if h == nil {
				h = http.Header{}
			}
			got, err := Parse(h, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for name, body := range map[string]string{
		"zot without a name":    `{"specversion":"1.0","type":"zotregistry.image.updated","data":{"reference":"1.0.0"}}`,
		"zot bad data":          `{"specversion":"1.0","type":"zotregistry.image.updated","data":"x"}`,
		"cloudevent no type":    `{"specversion":"1.0","data":{}}`,
		"harbor without a repo": `{"type":"PUSH_ARTIFACT","event_data":{"resources":[]}}`,
		"events not an array":   `{"events":"x"}`,
		"unknown":               `{"hello":1}`,
		"truncated":             `{"events":[`,
	} {
		if _, err := Parse(http.Header{}, []byte(body)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if _, ok := err.(*BadRequestError); !ok {
			t.Errorf("%s: %v is not a BadRequestError", name, err)
		}
	}
}
