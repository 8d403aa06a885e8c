package sha256sums_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"unicode"

	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
)

const (
	sumA = "a3f1c2e4b5d6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2"
	sumB = "0000000000000000000000000000000000000000000000000000000000000001"
	// sumZ ends in a zero byte: OpenTofu's decoder pads a digest that is
	// two hex digits short with one, so the short form still matches.
	sumZ = "a3f1c2e4b5d6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a100"
)

// OpenTofu's verdict on each file, for the package a.zip whose sha256 is
// sumA, is the oracle (tofu_reference_test.go); the cases document it and
// the messages oci-tofu gives.
func TestReadDecidesAsTofu(t *testing.T) {
	cases := []struct {
		name, in string
		// err: Read refuses the whole file; lookupErr: a.zip is refused.
		err, lookupErr string
		// unsigned: OpenTofu drops the hashes (a warning says so).
		unsigned bool
		warning  string
	}{
		{name: "canonical", in: sumA + "  a.zip\n" + sumB + "  b.zip\n"},
		{name: "no final newline", in: sumA + "  a.zip"},
		{name: "crlf", in: sumA + "  a.zip\r\n" + sumB + "  b.zip\r\n"},
		{name: "tab and runs of spaces", in: "  " + sumA + "\t   a.zip  \n"},
		{name: "upper-case hex", in: strings.ToUpper(sumA) + "  a.zip\n"},
		{name: "identical duplicate", in: sumA + "  a.zip\n" + sumA + "  a.zip\n"},
		{name: "duplicate differing in case only", in: sumA + "  a.zip\n" + strings.ToUpper(sumA) + "  a.zip\n"},
		{name: "conflict, first right", in: sumA + "  a.zip\n" + sumB + "  a.zip\n", warning: "line 2 lists a.zip again with another digest"},
		{name: "conflict, first wrong", in: sumB + "  a.zip\n" + sumA + "  a.zip\n", lookupErr: "does not match", warning: "line 2 lists a.zip again"},
		{name: "empty line", in: sumA + "  a.zip\n\n" + sumB + "  b.zip\n", err: "line 2 is empty"},
		{name: "trailing empty line", in: sumA + "  a.zip\n\n", err: "line 2 is empty"},
		{name: "blank crlf line", in: sumA + "  a.zip\r\n\r\n", err: "line 2 is empty"},
		{name: "whitespace-only line", in: sumA + "  a.zip\n \t\n", err: "line 2 is empty"},
		{name: "empty first line", in: "\n" + sumA + "  a.zip\n", err: "line 1 is empty"},
		{name: "empty line after a one-field line", in: "checksums\n\n" + sumA + "  a.zip\n", unsigned: true, warning: "line 1 has a single field"},
		{name: "binary-mode marker", in: sumA + " *a.zip\n", lookupErr: "line 1 lists *a.zip"},
		{name: "binary-mode marker on another line", in: sumA + "  a.zip\n" + sumB + " *b.zip\n"},
		{name: "byte order mark", in: "\ufeff" + sumA + "  a.zip\n", lookupErr: "byte order mark", unsigned: true},
		{name: "byte order mark on another line", in: "\ufeff" + sumB + "  b.zip\n" + sumA + "  a.zip\n", unsigned: true, warning: "byte order mark"},
		{name: "comment line", in: "# checksums\n" + sumA + "  a.zip\n", unsigned: true, warning: "line 1 starts with \"#\""},
		{name: "one-field line", in: sumA + "\n" + sumA + "  a.zip\n", unsigned: true, warning: "line 1 has a single field"},
		{name: "short digest", in: "abcd  a.zip\n", lookupErr: "does not match", unsigned: true},
		{name: "digest two digits short, ending in 00", in: sumZ[:62] + "  a.zip\n", lookupErr: "does not match", unsigned: true},
		{name: "long digest", in: sumA + "00  a.zip\n", lookupErr: "more than 64", unsigned: true},
		{name: "long digest, odd", in: sumA + "0  a.zip\n", lookupErr: "not a hex sha256 digest", unsigned: true},
		{name: "not hex", in: strings.Repeat("g", 64) + "  a.zip\n", lookupErr: "not a hex sha256 digest", unsigned: true},
		{name: "not listed", in: sumB + "  b.zip\n", lookupErr: "does not list a.zip"},
		{name: "path in a name", in: sumA + "  a.zip\n" + sumB + "  ../b.zip\n"},
		{name: "name with a space", in: sumA + "  a.zip and more\n"},
		{name: "empty file", in: "", lookupErr: "does not list"},
	}
	want := decodeSum(t, sumA)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oracle := tofuInstall([]byte(tc.in), "a.zip", want)
			f, err := sha256sums.Read([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want error containing %q, got %v", tc.err, err)
				}
				if oracle.installs {
					t.Fatalf("refused a file OpenTofu installs from")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sum, err := f.Lookup("a.zip")
			if err == nil && sum != sumA {
				err = errMismatch
			}
			if tc.lookupErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.lookupErr) {
					t.Fatalf("Lookup: want error containing %q, got %v (%s)", tc.lookupErr, err, sum)
				}
			} else if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if (err == nil) != oracle.installs {
				t.Fatalf("oci-tofu accepts a.zip: %v, OpenTofu installs it: %v (%s)", err == nil, oracle.installs, oracle.reason)
			}
			if oracle.installs && f.RecordsHashes() != oracle.signedHashes {
				t.Fatalf("RecordsHashes %v, OpenTofu records them: %v", f.RecordsHashes(), oracle.signedHashes)
			}
			if f.RecordsHashes() == tc.unsigned {
				t.Fatalf("RecordsHashes %v, want %v", f.RecordsHashes(), !tc.unsigned)
			}
			warnings := strings.Join(f.Warnings(), "\n")
			if tc.warning != "" && !strings.Contains(warnings, tc.warning) {
				t.Fatalf("warnings %q lack %q", warnings, tc.warning)
			}
			if tc.warning == "" && !tc.unsigned && warnings != "" {
				t.Fatalf("unexpected warnings: %s", warnings)
			}
		})
	}
}

type mismatch struct{}

func (mismatch) Error() string { return "digest does not match" }

var errMismatch error = mismatch{}

func decodeSum(t testing.TB, s string) [sha256.Size]byte {
	var b [sha256.Size]byte
	if _, err := hex.Decode(b[:], []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b
}

// A line longer than OpenTofu's scanner reads stops its reading of the
// signed hashes there; the lookup still sees every line.
func TestLongLineStopsTofuScanner(t *testing.T) {
	long := sumB + "  " + strings.Repeat("x", 70<<10) + "\n"
	f, err := sha256sums.Read([]byte(sumA + "  a.zip\n" + long + "\n"))
	if err != nil {
		t.Fatalf("the empty line after a too-long line is never reached by OpenTofu: %v", err)
	}
	if !f.RecordsHashes() || !strings.Contains(strings.Join(f.Warnings(), ""), "line 2 is longer") {
		t.Fatalf("warnings: %v", f.Warnings())
	}
	f, _ = sha256sums.Read([]byte(long + sumA + "  a.zip\n"))
	if f.RecordsHashes() {
		t.Fatal("a too-long first line leaves OpenTofu no hashes")
	}
	if got, err := f.Lookup("a.zip"); err != nil || got != sumA {
		t.Fatalf("lookup after a long line: %s %v", got, err)
	}
}

func TestParse(t *testing.T) {
	got, err := sha256sums.Parse([]byte(sumA + "  a.zip\r\n" + strings.ToUpper(sumB) + "\tb.zip\n" + sumB + "  a.zip\n" + "zz  c.zip\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := sha256sums.Sums{"a.zip": sumA, "b.zip": sumB}
	if len(got) != len(want) || got["a.zip"] != sumA || got["b.zip"] != sumB {
		t.Fatalf("got %v, want %v (first listing wins; undecodable digests left out)", got, want)
	}
	for _, bad := range []string{"", "zz  c.zip\n", sumA + "  a.zip\n\n"} {
		if _, err := sha256sums.Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestSHA256SumsBytesRoundTrip(t *testing.T) {
	s := sha256sums.Sums{"b.zip": sumB, "a.zip": sumA}
	want := sumA + "  a.zip\n" + sumB + "  b.zip\n"
	if got := string(s.Bytes()); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	back, err := sha256sums.Parse(s.Bytes())
	if err != nil || len(back) != 2 || back["a.zip"] != sumA {
		t.Fatalf("round trip: %v %v", back, err)
	}
}

// The TofuDL client's rules differ from OpenTofu's: it compares strings.
func TestTofuDLDigests(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{sumA + "  tofu.tar.gz\n", []string{sumA}},
		{sumA + "  tofu.tar.gz\r\n\n\n", []string{sumA}},
		{strings.ToUpper(sumA) + "  tofu.tar.gz\n", []string{strings.ToUpper(sumA)}},
		{sumA + " *tofu.tar.gz\n", nil},
		{sumA + "\ttofu.tar.gz\n", nil},
		{sumA + "  tofu.tar.gz\n" + sumB + "  tofu.tar.gz\n", []string{sumA, sumB}},
		{sumA + "  xtofu.tar.gz\n", nil},
	} {
		got := sha256sums.TofuDLDigests([]byte(tc.in), "tofu.tar.gz")
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%q: got %v, want %v", tc.in, got, tc.want)
		}
	}
}

// FuzzReadAgreesWithTofu compares, on any file, whether oci-tofu accepts
// the package a.zip (sha256 sumA) with what OpenTofu's own readers decide,
// and whether both keep the signed hashes.
func FuzzReadAgreesWithTofu(f *testing.F) {
	for _, s := range []string{
		sumA + "  a.zip\n",
		sumA + " *a.zip\r\n\r\n" + sumB + "\tb.zip",
		"\ufeff" + sumA + "  a.zip\n",
		"# x\n" + sumA + "  a.zip\n\n",
		sumZ[:62] + "  a.zip\n",
		sumB + "  a.zip\n" + sumA + "  a.zip\n",
		sumA + "00  a.zip\n",
		"\x00\xff  \n",
	} {
		f.Add([]byte(s))
	}
	want := decodeSum(f, sumA)
	f.Fuzz(func(t *testing.T, data []byte) {
		oracle := tofuInstall(data, "a.zip", want)
		accepted, records := ociTofuInstall(data, "a.zip")
		if accepted != oracle.installs {
			t.Fatalf("oci-tofu accepts: %v, OpenTofu installs: %v (%s)", accepted, oracle.installs, oracle.reason)
		}
		if accepted && records != oracle.signedHashes {
			t.Fatalf("oci-tofu says OpenTofu keeps the hashes: %v, OpenTofu does: %v", records, oracle.signedHashes)
		}
	})
}

// ociTofuInstall is the decision oci-tofu makes at ingest for name.
func ociTofuInstall(data []byte, name string) (accepted, recordsHashes bool) {
	f, err := sha256sums.Read(data)
	if err != nil {
		return false, false
	}
	sum, err := f.Lookup(name)
	return err == nil && sum == sumA, f.RecordsHashes()
}

// FuzzParseSHA256Sums: no input panics, and what Parse returns is
// well-formed and survives rendering.
func FuzzParseSHA256Sums(f *testing.F) {
	f.Add([]byte(sumA + "  a.zip\n"))
	f.Add([]byte(sumA + " *a.zip\r\n\r\n" + sumB + "\tb.zip"))
	f.Add([]byte("\x00\xff  \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := sha256sums.Read(data)
		if err != nil {
			return
		}
		file.Warnings()
		sums := file.Sums()
		for name, sum := range sums {
			if len(sum) != 64 || strings.ToLower(sum) != sum || name == "" || strings.ContainsFunc(name, unicode.IsSpace) {
				t.Fatalf("accepted bad entry %q %q", sum, name)
			}
			if got, err := file.Lookup(name); err != nil || got != sum {
				t.Fatalf("Lookup(%q) = %q, %v; Sums says %q", name, got, err, sum)
			}
		}
		back, err := sha256sums.Parse(sums.Bytes())
		if len(sums) > 0 && err != nil {
			t.Fatalf("rendered sums do not parse: %v\n%s", err, sums.Bytes())
		}
		for name, sum := range sums {
			if back[name] != sum {
				t.Fatalf("round trip changed %q: %q → %q", name, sum, back[name])
			}
		}
	})
}

// A file listing a name again and again reports the first few conflicts
// and counts the rest, so a hostile file cannot flood the output.
func TestConflictWarningsAreBounded(t *testing.T) {
	in := sumA + "  a.zip\n" + strings.Repeat(sumB+"  a.zip\n", 20)
	f, err := sha256sums.Read([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	w := f.Warnings()
	if len(w) != 6 || !strings.Contains(w[5], "15 more") {
		t.Fatalf("%d warnings: %q", len(w), w)
	}
}
