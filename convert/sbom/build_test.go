package sbom

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// A platform the demo provider is built for.
type demoPlatform struct{ GOOS, GOARCH, exe string }

var demoPlatforms = []demoPlatform{{"linux", "amd64", ""}, {"darwin", "arm64", ""}, {"windows", "amd64", ".exe"}}

var (
	demoOnce sync.Once
	demoDir  string
	demoBins map[string]string // platform os_arch → binary path
	demoErr  error
)

// demoBinaries builds the demo provider once per test run, for each of
// demoPlatforms, and returns the binaries by os_arch.
func demoBinaries(t testing.TB) map[string]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build the test provider")
	}
	demoOnce.Do(func() {
		demoDir, demoErr = os.MkdirTemp("", "oci-tofu-sbom-test-")
		if demoErr != nil {
			return
		}
		testenv.DemoProviderSource(t, demoDir) // testdata/gosrc/demo-provider
		demoBins = map[string]string{}
		for _, p := range demoPlatforms {
			out := filepath.Join(demoDir, p.GOOS+"_"+p.GOARCH, "terraform-provider-demo_v1.0.0"+p.exe)
			cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
			cmd.Dir = demoDir
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOOS="+p.GOOS, "GOARCH="+p.GOARCH, "CGO_ENABLED=0", "GOWORK=off", "GOTOOLCHAIN=local")
			if b, err := cmd.CombinedOutput(); err != nil {
				demoErr = &buildError{err: err, out: string(b)}
				return
			}
			demoBins[p.GOOS+"_"+p.GOARCH] = out
		}
	})
	if demoErr != nil {
		t.Fatalf("building the test provider: %v", demoErr)
	}
	return demoBins
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if demoDir != "" {
		os.RemoveAll(demoDir)
	}
	os.Exit(code)
}

// zipFile is an entry of a test zip.
type zipFile struct {
	name string
	data []byte
}

// makeZip zips the files, deflated, with fixed times.
func makeZip(t testing.TB, files ...zipFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, f := range files {
		fw, err := w.CreateHeader(&zip.FileHeader{Name: f.name, Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeELF is a minimal little-endian 64-bit ELF executable whose only
// section, .go.buildinfo in a loadable segment, holds a Go build
// information header in the inline form of Go 1.18 and later, followed by
// vers and mod as length-prefixed strings; modLen, if not negative, is
// the length declared for mod instead of its own.
func fakeELF(vers, mod string, modLen int) []byte {
	var data []byte
	data = append(data, buildInfoMagic...)
	data = append(data, 8, 2) // pointer size, flags: inline strings
	data = append(data, make([]byte, 16)...)
	if mod != "" {
		// the 16-byte sentinels the linker frames it with
		mod = "0123456789abcdef" + mod + "fedcba9876543210"
	}
	data = binary.AppendUvarint(data, uint64(len(vers)))
	data = append(data, vers...)
	if modLen < 0 {
		modLen = len(mod)
	}
	data = binary.AppendUvarint(data, uint64(modLen))
	data = append(data, mod...)
	const ehsize, phsize, shsize, dataOff, vaddr = 64, 56, 64, 128, 0x400000
	shstrtab := "\x00.go.buildinfo\x00.shstrtab\x00"
	strOff := dataOff + len(data)
	shOff := (strOff + len(shstrtab) + 7) &^ 7
	out := make([]byte, shOff+3*shsize)
	le := binary.LittleEndian
	copy(out, "\x7fELF\x02\x01\x01")
	le.PutUint16(out[16:], 2)  // ET_EXEC
	le.PutUint16(out[18:], 62) // EM_X86_64
	le.PutUint32(out[20:], 1)
	le.PutUint64(out[32:], ehsize) // e_phoff
	le.PutUint64(out[40:], uint64(shOff))
	le.PutUint16(out[52:], ehsize)
	le.PutUint16(out[54:], phsize)
	le.PutUint16(out[56:], 1)
	le.PutUint16(out[58:], shsize)
	le.PutUint16(out[60:], 3)
	le.PutUint16(out[62:], 2) // e_shstrndx
	ph := out[ehsize:]
	le.PutUint32(ph[0:], 1) // PT_LOAD
	le.PutUint32(ph[4:], 6) // RW
	le.PutUint64(ph[8:], dataOff)
	le.PutUint64(ph[16:], vaddr)
	le.PutUint64(ph[24:], vaddr)
	le.PutUint64(ph[32:], uint64(len(data)))
	le.PutUint64(ph[40:], uint64(len(data)))
	le.PutUint64(ph[48:], 0x1000)
	copy(out[dataOff:], data)
	copy(out[strOff:], shstrtab)
	sh := out[shOff+shsize:]
	le.PutUint32(sh[0:], 1) // ".go.buildinfo"
	le.PutUint32(sh[4:], 1) // SHT_PROGBITS
	le.PutUint64(sh[8:], 3) // SHF_WRITE|SHF_ALLOC
	le.PutUint64(sh[16:], vaddr)
	le.PutUint64(sh[24:], dataOff)
	le.PutUint64(sh[32:], uint64(len(data)))
	le.PutUint64(sh[48:], 16)
	sh = out[shOff+2*shsize:]
	le.PutUint32(sh[0:], 15) // ".shstrtab"
	le.PutUint32(sh[4:], 3)  // SHT_STRTAB
	le.PutUint64(sh[24:], uint64(strOff))
	le.PutUint64(sh[32:], uint64(len(shstrtab)))
	le.PutUint64(sh[48:], 1)
	return out
}

// fakeMod is a small module information, as the linker writes it.
const fakeMod = "path\texample.com/fake\nmod\texample.com/fake\t(devel)\t\ndep\tgolang.org/x/text\tv0.3.7\th1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk=\nbuild\tGOOS=linux\n"
