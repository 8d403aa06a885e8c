package sha256sums

import (
	"strings"
	"testing"
)

const (
	sumA = "a3f1c2e4b5d6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2"
	sumB = "0000000000000000000000000000000000000000000000000000000000000001"
)

func TestParseSHA256Sums(t *testing.T) {
	cases := []struct {
		name, in string
		want     Sums
		err      string
	}{
		{name: "plain", in: sumA + "  a.zip\n" + sumB + "  b.zip\n", want: Sums{"a.zip": sumA, "b.zip": sumB}},
		{name: "crlf and blank lines", in: "\r\n" + sumA + "  a.zip\r\n\r\n" + sumB + "  b.zip\r\n", want: Sums{"a.zip": sumA, "b.zip": sumB}},
		{name: "extra whitespace and tabs", in: "  " + sumA + "\t   a.zip  \n", want: Sums{"a.zip": sumA}},
		{name: "binary marker", in: sumA + " *a.zip\n", want: Sums{"a.zip": sumA}},
		{name: "upper-case hex", in: strings.ToUpper(sumA) + "  a.zip\n", want: Sums{"a.zip": sumA}},
		{name: "same duplicate", in: sumA + "  a.zip\n" + sumA + "  a.zip\n", want: Sums{"a.zip": sumA}},
		{name: "conflicting duplicate", in: sumA + "  a.zip\n" + sumB + "  a.zip\n", err: "listed twice"},
		{name: "short digest", in: "abcd  a.zip\n", err: "not a sha256"},
		{name: "not hex", in: strings.Repeat("g", 64) + "  a.zip\n", err: "not a sha256"},
		{name: "no name", in: sumA + "\n", err: "want"},
		{name: "path", in: sumA + "  ../a.zip\n", err: "must not contain a path"},
		{name: "empty", in: "\n\n", err: "lists no files"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want error containing %q, got %v (%v)", tc.err, err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestSHA256SumsBytesRoundTrip(t *testing.T) {
	s := Sums{"b.zip": sumB, "a.zip": sumA}
	want := sumA + "  a.zip\n" + sumB + "  b.zip\n"
	if got := string(s.Bytes()); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	back, err := Parse(s.Bytes())
	if err != nil || len(back) != 2 || back["a.zip"] != sumA {
		t.Fatalf("round trip: %v %v", back, err)
	}
}

func FuzzParseSHA256Sums(f *testing.F) {
	f.Add([]byte(sumA + "  a.zip\n"))
	f.Add([]byte(sumA + " *a.zip\r\n\r\n" + sumB + "\tb.zip"))
	f.Add([]byte("\x00\xff  \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sums, err := Parse(data)
		if err != nil {
			return
		}
		for name, sum := range sums {
			if len(sum) != 64 || strings.ToLower(sum) != sum || name == "" || strings.ContainsAny(name, "/\\") {
				t.Fatalf("accepted bad entry %q %q", sum, name)
			}
		}
		// What we render parses back to the same set.
		back, err := Parse(sums.Bytes())
		if err != nil {
			// Names with leading '*' or whitespace cannot round-trip; they
			// are still refused consistently, not accepted wrongly.
			return
		}
		for name, sum := range sums {
			if back[name] != sum && !strings.HasPrefix(name, "*") {
				t.Fatalf("round trip changed %q: %q → %q", name, sum, back[name])
			}
		}
	})
}
