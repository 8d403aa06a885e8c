package wire

// TofuDL mirror documents (docs/reference.md §7).

// TofuAPI is api.json: every release, newest first.
type TofuAPI struct {
	Versions []TofuVersion `json:"versions"`
}

// TofuVersion is one release of api.json.
type TofuVersion struct {
	ID    string   `json:"id"`
	Files []string `json:"files"`
}
