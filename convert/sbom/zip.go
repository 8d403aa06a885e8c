package sbom

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ErrNoExecutable is FromZip's error for a zip that holds no executable:
// there is nothing to describe (a release packaging only scripts or data),
// and the pushes store no SBOM for it, saying so.
var ErrNoExecutable = errors.New("holds no executable")

// FromZip makes the SBOM of a provider package zip (one platform's), named
// by the options; r reads the zip (size bytes). It fails on a zip it cannot
// read, one beyond the bounds (MaxEntries, MaxUncompressed), and one with no
// executable; an executable whose build information is missing, forged or
// too large is listed as not a Go binary.
func FromZip(r io.ReaderAt, size int64, o Options) (*Document, error) {
	fileName, err := o.fileName()
	if err != nil {
		return nil, err
	}
	zd, err := zipDigest(r, size, o.ZipDigest)
	if err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("sbom: %s: %w", fileName, err)
	}
	if len(zr.File) > MaxEntries {
		return nil, fmt.Errorf("sbom: %s has %d entries, more than the %d accepted", fileName, len(zr.File), MaxEntries)
	}
	created := o.Created.UTC().Truncate(time.Second)
	if o.Created.IsZero() {
		created = time.Unix(0, 0).UTC()
	}
	doc := &Document{Name: o.Name, Version: o.Version, Platform: o.Platform, FileName: fileName, ZipDigest: zd, Created: created}
	seen := map[string]bool{}
	var total uint64
	for _, f := range zr.File {
		if seen[f.Name] {
			return nil, fmt.Errorf("sbom: %s holds %q twice", fileName, f.Name)
		}
		seen[f.Name] = true
		if strings.HasSuffix(f.Name, "/") || !f.Mode().IsRegular() {
			continue
		}
		if f.UncompressedSize64 > MaxUncompressed-total {
			return nil, fmt.Errorf("sbom: %s: its entries declare more than %d bytes uncompressed (%q: %d)", fileName, MaxUncompressed, f.Name, f.UncompressedSize64)
		}
		total += f.UncompressedSize64
		exe, err := readEntry(r, size, f, o)
		if err != nil {
			return nil, fmt.Errorf("sbom: %s: %w", fileName, err)
		}
		if exe != nil {
			doc.Executables = append(doc.Executables, *exe)
		}
	}
	if len(doc.Executables) == 0 {
		return nil, fmt.Errorf("sbom: %s %w", fileName, ErrNoExecutable)
	}
	slices.SortFunc(doc.Executables, func(a, b Executable) int { return strings.Compare(a.Name, b.Name) })
	return doc, nil
}

// isExecutable says whether a file is an executable, by its first bytes
// (ELF, PE, Mach-O, fat Mach-O, XCOFF) or its name.
func isExecutable(name string, head []byte) bool {
	for _, magic := range []string{"\x7fELF", "MZ", "\xfe\xed\xfa\xce", "\xfe\xed\xfa\xcf", "\xce\xfa\xed\xfe", "\xcf\xfa\xed\xfe", "\xca\xfe\xba\xbe", "\x01\xdf", "\x01\xf7"} {
		if bytes.HasPrefix(head, []byte(magic)) {
			return true
		}
	}
	base := name[strings.LastIndexByte(name, '/')+1:]
	return strings.HasPrefix(base, "terraform-provider-")
}

// readEntry reads an entry: nil if it is no executable; else the
// executable, copied to a temporary file while hashed and scanned, and its
// build information read from that file. A stored (uncompressed) entry is
// read where it is in the zip (r, zipSize bytes), nothing copied.
func readEntry(r io.ReaderAt, zipSize int64, f *zip.File, o Options) (*Executable, error) {
	if f.Method == zip.Store && f.CompressedSize64 == f.UncompressedSize64 {
		if off, err := f.DataOffset(); err == nil && off >= 0 && off <= zipSize && f.UncompressedSize64 <= uint64(zipSize-off) {
			return readStored(io.NewSectionReader(r, off, int64(f.UncompressedSize64)), f, o)
		}
	}
	tempDir := o.TempDir
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%q: %w", f.Name, err)
	}
	defer rc.Close()
	head := make([]byte, 4)
	n, err := io.ReadFull(rc, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, fmt.Errorf("%q: %w", f.Name, err)
	}
	head = head[:n]
	if !isExecutable(f.Name, head) {
		return nil, nil
	}
	if !plain(f.Name) {
		return nil, fmt.Errorf("the executable %q is not named in printable UTF-8", f.Name)
	}
	tmp, err := os.CreateTemp(tempDir, "oci-tofu-sbom-*")
	if err != nil {
		return nil, err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	h := entryHash(f.Name, o)
	scan := &magicScanner{}
	w := io.MultiWriter(tmp, h, scan)
	if _, err := w.Write(head); err != nil {
		return nil, err
	}
	// archive/zip fails a read past the declared size; the limit is a
	// second guard.
	copied, err := io.Copy(w, io.LimitReader(rc, int64(f.UncompressedSize64)+1-int64(n)))
	size := copied + int64(n)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", f.Name, err)
	}
	if uint64(size) != f.UncompressedSize64 {
		return nil, fmt.Errorf("%q: %d bytes, %d declared", f.Name, size, f.UncompressedSize64)
	}
	exe := &Executable{Name: f.Name, SHA256: h.sum(), Size: size}
	exe.Go, err = readBuildInfo(tmp, scan)
	if err != nil {
		exe.Go, exe.NotGo = nil, err.Error()
	}
	return exe, nil
}

// readStored is readEntry for a stored entry, read in place (sec): its
// bytes are hashed, scanned and checked against the entry's CRC-32 as
// archive/zip checks them, and its build information read from sec.
func readStored(sec *io.SectionReader, f *zip.File, o Options) (*Executable, error) {
	head := make([]byte, 4)
	n, err := sec.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("%q: %w", f.Name, err)
	}
	if !isExecutable(f.Name, head[:n]) {
		return nil, nil
	}
	if !plain(f.Name) {
		return nil, fmt.Errorf("the executable %q is not named in printable UTF-8", f.Name)
	}
	h, crc, scan := entryHash(f.Name, o), crc32.NewIEEE(), &magicScanner{}
	read, err := io.Copy(io.MultiWriter(h, crc, scan), io.NewSectionReader(sec, 0, sec.Size()))
	if err != nil {
		return nil, fmt.Errorf("%q: %w", f.Name, err)
	}
	if read != sec.Size() {
		return nil, fmt.Errorf("%q: %d bytes, %d declared", f.Name, read, sec.Size())
	}
	if f.CRC32 != 0 && crc.Sum32() != f.CRC32 {
		return nil, fmt.Errorf("%q: %w", f.Name, zip.ErrChecksum)
	}
	exe := &Executable{Name: f.Name, SHA256: h.sum(), Size: read}
	exe.Go, err = readBuildInfo(sec, scan)
	if err != nil {
		exe.Go, exe.NotGo = nil, err.Error()
	}
	return exe, nil
}

// entryHash computes an executable's sha256, or, when the caller has
// (Options.SHA256), takes it.
func entryHash(name string, o Options) *hashOrKnown {
	if sum, ok := o.SHA256[name]; ok {
		return &hashOrKnown{known: sum}
	}
	return &hashOrKnown{h: sha256.New()}
}

type hashOrKnown struct {
	h     hash.Hash
	known string
}

func (h *hashOrKnown) Write(b []byte) (int, error) {
	if h.h == nil {
		return len(b), nil
	}
	return h.h.Write(b)
}

func (h *hashOrKnown) sum() string {
	if h.h == nil {
		return h.known
	}
	return hex.EncodeToString(h.h.Sum(nil))
}

// readBuildInfo reads the Go build information of an executable whose
// headers the scanner has found, or says why it cannot.
func readBuildInfo(r io.ReaderAt, scan *magicScanner) (*GoBuild, error) {
	if scan.tooMany {
		return nil, fmt.Errorf("not a readable Go binary: more than %d Go build information headers", maxHeaders)
	}
	for _, off := range scan.offsets {
		if err := checkHeader(r, off); err != nil {
			return nil, fmt.Errorf("not a readable Go binary: %w", err)
		}
	}
	bi, err := buildinfo.Read(r)
	if err != nil {
		return nil, fmt.Errorf("not a Go binary (%w)", err)
	}
	if len(bi.Deps) > MaxModules {
		return nil, fmt.Errorf("not a readable Go binary: its build information lists %d modules, more than the %d accepted", len(bi.Deps), MaxModules)
	}
	if err := checkBuildInfo(bi); err != nil {
		return nil, fmt.Errorf("not a readable Go binary: %w", err)
	}
	return goBuild(bi), nil
}

// checkBuildInfo checks what debug/buildinfo does not: that the Go version
// is one, and that no string holds control characters (which a forged
// build information can, and which its text form cannot carry).
func checkBuildInfo(bi *debug.BuildInfo) error {
	v := bi.GoVersion
	if len(v) > 256 || !strings.HasPrefix(v, "go") && !strings.HasPrefix(v, "devel ") || !plain(v) {
		return fmt.Errorf("its Go version %.64q is none", v)
	}
	strs := []string{bi.Path}
	for _, m := range append([]*debug.Module{&bi.Main}, bi.Deps...) {
		for ; m != nil; m = m.Replace {
			strs = append(strs, m.Path, m.Version, m.Sum)
		}
	}
	for _, s := range bi.Settings {
		strs = append(strs, s.Key, s.Value)
	}
	for _, s := range strs {
		if !plain(s) {
			return fmt.Errorf("its build information holds %.64q", s)
		}
	}
	return nil
}

// plain says whether s is UTF-8 without control characters.
func plain(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// checkHeader checks the lengths a build information header at off
// declares (Go 1.18 and later: the header is followed by the version and
// the module information, each after its length as a uvarint).
func checkHeader(r io.ReaderAt, off int64) error {
	const headerSize, flagsInline = 32, 0x2
	b := make([]byte, headerSize+binary.MaxVarintLen64)
	n, _ := r.ReadAt(b, off)
	b = b[:n]
	if len(b) < headerSize || b[15]&flagsInline == 0 {
		return nil // no header, or the old form: debug/buildinfo judges
	}
	versLen, k := binary.Uvarint(b[headerSize:])
	if k <= 0 {
		return nil
	}
	if versLen > 256 {
		return fmt.Errorf("its build information declares a Go version of %d bytes", versLen)
	}
	b = make([]byte, binary.MaxVarintLen64)
	n, _ = r.ReadAt(b, off+headerSize+int64(k)+int64(versLen))
	modLen, k := binary.Uvarint(b[:n])
	if k > 0 && modLen > MaxBuildInfo {
		return fmt.Errorf("its build information declares %d bytes, more than the %d accepted", modLen, MaxBuildInfo)
	}
	return nil
}

// buildInfoMagic starts a Go build information header.
var buildInfoMagic = []byte("\xff Go buildinf:")

// maxHeaders is the most build information headers one executable may
// seem to have (a Go binary has one; one that reads build information,
// like go itself, has the magic among its strings too).
const maxHeaders = 16

// magicScanner is a writer that notes the offsets of buildInfoMagic in
// what is written, without allocating per write.
type magicScanner struct {
	offsets []int64
	tooMany bool
	written int64
	tail    []byte // the last len(buildInfoMagic)-1 bytes written, at most
	joint   [2 * 16]byte
}

func (s *magicScanner) Write(p []byte) (int, error) {
	// a match that starts in the tail and ends in p
	if len(s.tail) > 0 {
		j := append(s.joint[:0], s.tail...)
		j = append(j, p[:min(len(p), len(buildInfoMagic)-1)]...)
		if i := bytes.Index(j, buildInfoMagic); i >= 0 && i < len(s.tail) {
			s.note(s.written - int64(len(s.tail)) + int64(i))
		}
	}
	for i := 0; ; {
		j := bytes.Index(p[i:], buildInfoMagic)
		if j < 0 {
			break
		}
		s.note(s.written + int64(i+j))
		i += j + 1
	}
	s.written += int64(len(p))
	keep := len(buildInfoMagic) - 1
	if len(p) >= keep {
		s.tail = append(s.tail[:0], p[len(p)-keep:]...)
	} else {
		s.tail = append(s.tail, p...)
		s.tail = s.tail[max(0, len(s.tail)-keep):]
	}
	return len(p), nil
}

func (s *magicScanner) note(off int64) {
	if len(s.offsets) == maxHeaders {
		s.tooMany = true
		return
	}
	s.offsets = append(s.offsets, off)
}

// goBuild is the GoBuild of a build information.
func goBuild(bi *debug.BuildInfo) *GoBuild {
	g := &GoBuild{GoVersion: bi.GoVersion, Path: bi.Path, Main: fromDebug(&bi.Main)}
	for _, d := range bi.Deps {
		g.Deps = append(g.Deps, fromDebug(d))
	}
	if len(bi.Settings) > 0 {
		g.Settings = map[string]string{}
		for _, s := range bi.Settings {
			g.Settings[s.Key] = s.Value
		}
	}
	return g
}

func fromDebug(m *debug.Module) Module {
	out := Module{Path: m.Path, Version: m.Version, Sum: m.Sum}
	if m.Replace != nil {
		r := fromDebug(m.Replace)
		out.Replace = &r
	}
	return out
}

// BuildInfo is the runtime/debug.BuildInfo of a GoBuild, its settings
// ordered by key: its String is what `go version -m` prints of the
// executable (without the first line).
func (b *GoBuild) BuildInfo() *debug.BuildInfo {
	bi := &debug.BuildInfo{GoVersion: b.GoVersion, Path: b.Path, Main: debugModule(b.Main)}
	for _, d := range b.Deps {
		m := debugModule(d)
		bi.Deps = append(bi.Deps, &m)
	}
	keys := make([]string, 0, len(b.Settings))
	for k := range b.Settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: k, Value: b.Settings[k]})
	}
	return bi
}

func debugModule(m Module) debug.Module {
	out := debug.Module{Path: m.Path, Version: m.Version, Sum: m.Sum}
	if m.Replace != nil {
		r := debugModule(*m.Replace)
		out.Replace = &r
	}
	return out
}
