package sharedstate

import (
	"strings"
	"testing"
)

// The URL is read as redigo's DialURL read it; a password given apart
// from the URL logs in as the URL's user.
func TestParseRedisTarget(t *testing.T) {
	for _, c := range []struct {
		url, password string
		want          redisTarget
	}{
		{"redis://h", "", redisTarget{address: "h:6379", host: "h"}},
		{"redis://h:7000/", "", redisTarget{address: "h:7000", host: "h"}},
		{"rediss://u:p@h:6380/2", "", redisTarget{address: "h:6380", host: "h", username: "u", password: "p", db: 2, tls: true}},
		{"redis://:p@h/0", "", redisTarget{address: "h:6379", host: "h", password: "p"}},
		{"redis://p@h", "", redisTarget{address: "h:6379", host: "h", password: "p"}}, // redis-cli's reading
		{"redis://u@h", "env", redisTarget{address: "h:6379", host: "h", username: "u", password: "env"}},
		{"redis://h/3", "env", redisTarget{address: "h:6379", host: "h", password: "env", db: 3}},
		{"redis://[::1]:7000", "", redisTarget{address: "[::1]:7000", host: "::1"}},
	} {
		got, err := parseRedisTarget(c.url, c.password)
		if err != nil || got != c.want {
			t.Errorf("%s (password %q) = %+v, %v; want %+v", c.url, c.password, got, err, c.want)
		}
	}
	for _, c := range []struct{ url, password, want string }{
		{"http://h", "", "must be a redis://"},
		{"redis:h", "", "must be a redis://"},
		{"redis://h/db", "", "is not a number"},
		{"redis://:sekrit@h", "other-sekrit", "give one"},
	} {
		_, err := parseRedisTarget(c.url, c.password)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "sekrit") {
			t.Errorf("%s: %v, want an error saying %q without the password", c.url, err, c.want)
		}
	}
}
