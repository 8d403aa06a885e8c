package vulns

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
)

// Bounds of a database. The public Go vulnerability database held 4,789
// entries (20 MiB) in November 2026; its modules.json, about 1 MiB.
const (
	MaxDBJSONBytes      = 64 << 10  // index/db.json
	MaxModulesJSONBytes = 64 << 20  // index/modules.json
	MaxEntries          = 100_000   // distinct entries index/modules.json names
	MaxModuleVulns      = 1_000_000 // (module, entry) pairs in index/modules.json
	MaxDBBytes          = 1 << 30   // all the entry files read, together
)

// The files of the layout (https://go.dev/security/vuln/database#api),
// as govulncheck reads them from a file:// database.
const (
	dbFile      = "index/db.json"
	modulesFile = "index/modules.json"
	idDir       = "ID"
)

// DB is a vulnerability database loaded from a directory, indexed by
// module path. It is immutable: to reload, Open again and swap.
type DB struct {
	modified    time.Time
	fingerprint string
	entries     int
	byModule    map[string][]ref
	skipped     []Skipped
	now         func() time.Time
}

// ref is one affected module of one entry.
type ref struct {
	e *entry
	a *affected
}

// Skipped is an entry file Open did not use, and why.
type Skipped struct {
	File   string // relative to the database directory, e.g. ID/GO-2022-1059.json
	Reason string
}

func (s Skipped) String() string { return s.File + ": " + s.Reason }

type dbMeta struct {
	Modified time.Time `json:"modified"`
}

type moduleMeta struct {
	Path  string `json:"path"`
	Vulns []struct {
		ID string `json:"id"`
	} `json:"vulns"`
}

// Open loads the database in dir, laid out as the Go vulnerability
// database (what `govulncheck -db file://DIR` reads): index/db.json (the
// time of the last change), index/modules.json (for each module path, the
// IDs of the entries affecting it) and ID/<id>.json (the OSV entries).
// index/vulns.json is not read (govulncheck does not read it either).
//
// The index is the database: a missing, malformed or oversized
// index/db.json or index/modules.json, an ID in it that could not name a
// file, or a database over its bounds (MaxEntries, MaxModuleVulns,
// MaxDBBytes) is an error naming the file. An entry file that is missing,
// unreadable, over its bounds (MaxEntryBytes, MaxAffected, …), not valid
// OSV, holding an ID other than its name's, or with a malformed range is
// skipped and listed by Skipped, with the reason: one bad entry does not
// blind the caller to the others, and the caller decides whether a
// database with skipped entries is good enough.
//
// Only the pairs (module path, entry) that index/modules.json lists are
// matched, as govulncheck looks entries up.
func Open(dir string) (*DB, error) {
	idx, err := readIndex(dir)
	if err != nil {
		return nil, err
	}
	db := &DB{modified: idx.modified, byModule: map[string][]ref{}, now: time.Now}
	loaded := map[string]*entry{}
	stamps := make([]string, 0, len(idx.ids))
	var total int64
	for _, id := range idx.ids {
		rel := idDir + "/" + id + ".json"
		stamps = append(stamps, stamp(dir, rel)) // before the read: a file changed after it is read again
		b, err := localfile.ReadBounded(filepath.Join(dir, idDir, id+".json"), MaxEntryBytes)
		if err != nil {
			db.skipped = append(db.skipped, Skipped{File: rel, Reason: err.Error()})
			continue
		}
		if total += int64(len(b)); total > MaxDBBytes {
			return nil, fmt.Errorf("%s: the entries are larger than %d bytes together", dir, MaxDBBytes)
		}
		e, err := parseEntry(b)
		if err != nil {
			db.skipped = append(db.skipped, Skipped{File: rel, Reason: err.Error()})
			continue
		}
		if e.id != id {
			db.skipped = append(db.skipped, Skipped{File: rel, Reason: fmt.Sprintf("holds entry %q", e.id)})
			continue
		}
		loaded[id] = e
	}
	db.fingerprint = fingerprint(idx, stamps)
	db.entries = len(loaded)
	db.index(idx.modules, loaded)
	return db, nil
}

// index fills byModule with the (module path, entry) pairs modules
// lists, of the entries loaded.
func (db *DB) index(modules []moduleMeta, loaded map[string]*entry) {
	seen := map[[2]string]bool{}
	for _, m := range modules {
		for _, v := range m.Vulns {
			e := loaded[v.ID]
			if e == nil || seen[[2]string{m.Path, v.ID}] {
				continue
			}
			seen[[2]string{m.Path, v.ID}] = true
			for i := range e.affected {
				if e.affected[i].module == m.Path {
					db.byModule[m.Path] = append(db.byModule[m.Path], ref{e: e, a: &e.affected[i]})
				}
			}
		}
	}
}

// dbIndex is a database's index files, read and checked.
type dbIndex struct {
	dbJSON, modulesJSON []byte
	modified            time.Time
	modules             []moduleMeta
	ids                 []string // the entries modules names, sorted
}

// readIndex reads and checks index/db.json and index/modules.json.
func readIndex(dir string) (*dbIndex, error) {
	dbJSON, modulesJSON, err := readIndexFiles(dir)
	if err != nil {
		return nil, err
	}
	return parseIndex(dir, dbJSON, modulesJSON)
}

func readIndexFiles(dir string) (dbJSON, modulesJSON []byte, err error) {
	dbJSON, err = localfile.ReadBounded(filepath.Join(dir, dbFile), MaxDBJSONBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("vulnerability database %s: %w", dir, err)
	}
	modulesJSON, err = localfile.ReadBounded(filepath.Join(dir, modulesFile), MaxModulesJSONBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("vulnerability database %s: %w", dir, err)
	}
	return dbJSON, modulesJSON, nil
}

func parseIndex(dir string, dbJSON, modulesJSON []byte) (*dbIndex, error) {
	idx := &dbIndex{dbJSON: dbJSON, modulesJSON: modulesJSON}
	var meta dbMeta
	if err := json.Unmarshal(dbJSON, &meta); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, dbFile), err)
	}
	if meta.Modified.IsZero() {
		return nil, fmt.Errorf("%s: no modified time", filepath.Join(dir, dbFile))
	}
	idx.modified = meta.Modified
	if err := json.Unmarshal(modulesJSON, &idx.modules); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, modulesFile), err)
	}
	var err error
	if idx.ids, err = entryIDs(idx.modules); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, modulesFile), err)
	}
	return idx, nil
}

// entryIDs are the distinct entries modules names, sorted, within the
// bounds.
func entryIDs(modules []moduleMeta) ([]string, error) {
	ids := map[string]bool{}
	pairs := 0
	for _, m := range modules {
		if m.Path == "" {
			return nil, errors.New("a module with no path")
		}
		for _, v := range m.Vulns {
			if err := checkID("entry ID", v.ID); err != nil {
				return nil, fmt.Errorf("module %.100q: %w", m.Path, err)
			}
			ids[v.ID] = true
			if pairs++; pairs > MaxModuleVulns {
				return nil, fmt.Errorf("more than %d (module, entry) pairs", MaxModuleVulns)
			}
		}
	}
	if len(ids) > MaxEntries {
		return nil, fmt.Errorf("%d entries, more than %d", len(ids), MaxEntries)
	}
	return slices.Sorted(maps.Keys(ids)), nil
}

// stamp is an entry file's name, size and modification time, or why it
// cannot be read: what the Fingerprint takes of it.
func stamp(dir, rel string) string {
	fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return rel + " " + err.Error()
	}
	return fmt.Sprintf("%s %d %d", rel, fi.Size(), fi.ModTime().UnixNano())
}

func fingerprint(idx *dbIndex, stamps []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", len(idx.dbJSON))
	h.Write(idx.dbJSON)
	fmt.Fprintf(h, "%d\n", len(idx.modulesJSON))
	h.Write(idx.modulesJSON)
	for _, s := range stamps {
		fmt.Fprintf(h, "%s\n", s)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Fingerprint is a digest of the files a database is read from: its
// index files (index/db.json and index/modules.json, at most a few MiB)
// and the name, size and modification time of each entry file the index
// names (a stat each): a watcher of the directory reloads when it
// differs from the loaded DB's Fingerprint, so an entry written after
// its index is seen too. An entry rewritten with the same size within
// the file system's timestamp granularity is not.
//
// Index files that read but do not parse are fingerprinted by their
// bytes alone (Open then says what is wrong with them).
func Fingerprint(dir string) (string, error) {
	dbJSON, modulesJSON, err := readIndexFiles(dir)
	if err != nil {
		return "", err
	}
	idx, err := parseIndex(dir, dbJSON, modulesJSON)
	if err != nil {
		return fingerprint(&dbIndex{dbJSON: dbJSON, modulesJSON: modulesJSON}, nil), nil
	}
	stamps := make([]string, len(idx.ids))
	for i, id := range idx.ids {
		stamps[i] = stamp(dir, idDir+"/"+id+".json")
	}
	return fingerprint(idx, stamps), nil
}

// Modified is the database's last change, from index/db.json.
func (db *DB) Modified() time.Time { return db.modified }

// Fingerprint is the Fingerprint of the directory when it was opened.
func (db *DB) Fingerprint() string { return db.fingerprint }

// Entries is the number of entries loaded (not skipped).
func (db *DB) Entries() int { return db.entries }

// Skipped lists the entry files Open did not use, by file name.
func (db *DB) Skipped() []Skipped { return append([]Skipped(nil), db.skipped...) }

// SkippedError is nil when no entry was skipped, else an error naming
// them: for a caller that wants every entry or nothing.
func (db *DB) SkippedError() error {
	if len(db.skipped) == 0 {
		return nil
	}
	errs := make([]error, len(db.skipped))
	for i, s := range db.skipped {
		errs[i] = errors.New(s.String())
	}
	return fmt.Errorf("%d vulnerability entries skipped: %w", len(db.skipped), errors.Join(errs...))
}
