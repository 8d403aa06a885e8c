package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestReorderArgs(t *testing.T) {
	app := newApp()
	for _, tc := range []struct{ in, want string }{
		{"lock ./infra --platform linux_amd64 --json", "lock --platform linux_amd64 --json ./infra"},
		{"lock ./infra --platform=linux_amd64", "lock --platform=linux_amd64 ./infra"},
		{"push provider ./dist repo --key k.asc --unsigned", "push provider --key k.asc --unsigned ./dist repo"},
		{"export --provider-template T ./exp acme/widgets --platform linux_amd64", "export --provider-template T --platform linux_amd64 ./exp acme/widgets"},
		{"verify REF --skip-zips", "verify --skip-zips REF"},
		{"verify --skip-zips -- --json", "verify --skip-zips -- --json"},
		{"verify a -- -b --json", "verify -- a -b --json"},
		{"pull module a - --quiet", "pull module --quiet a -"},
		{"lock . --nosuch x", "lock --nosuch . x"},
		{"psuh provider --key k", "psuh provider --key k"},
		{"--version", "--version"},
		{"lock . --pl --generate-bash-completion", "lock --pl . --generate-bash-completion"},
		{"serve --listen :1 --plain-http", "serve --listen :1 --plain-http"},
		{"push module src repo:1 --also-tag latest", "push module --also-tag latest src repo:1"},
	} {
		got := reorderArgs(app, append([]string{"oci-tofu"}, strings.Fields(tc.in)...))[1:]
		if want := strings.Fields(tc.want); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.in, got, want)
		}
	}
}
