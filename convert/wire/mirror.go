package wire

// Provider Network Mirror Protocol documents (docs/reference.md §4), as the proxy
// serves them and `tofu providers mirror` writes them.

// MirrorIndex is a network mirror's index.json.
type MirrorIndex struct {
	Versions map[string]struct{} `json:"versions"`
}

// MirrorVersion is a network mirror's <version>.json.
type MirrorVersion struct {
	Archives map[string]MirrorArchive `json:"archives"`
}

// MirrorArchive is one platform's entry in <version>.json.
type MirrorArchive struct {
	URL    string   `json:"url"`
	Hashes []string `json:"hashes,omitempty"`
}
