package sbom

import (
	"fmt"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Summary is what a stored SBOM says, in short: per executable, its Go
// version, main module, number of modules and VCS revision (`oci-tofu
// sbom --summary`, the proxy's SBOM page).
type Summary struct {
	Platform    string              `json:"platform"`
	File        string              `json:"file"`
	ZipDigest   digest.Digest       `json:"-"`
	Referrer    string              `json:"referrer"`
	Created     time.Time           `json:"created"`
	Executables []ExecutableSummary `json:"executables"`
}

// ExecutableSummary is one executable of a Summary: a Go binary's build
// in short, or why it has no build information (NotGo).
type ExecutableSummary struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Go: GoVersion, MainModule (path@version), Modules (the main
	// module's and its dependencies) and Revision (vcs.revision, "" when
	// the build recorded none).
	Go         bool   `json:"-"`
	NotGo      string `json:"not_go,omitempty"`
	GoVersion  string `json:"go_version,omitempty"`
	MainModule string `json:"main_module,omitempty"`
	Modules    int    `json:"modules,omitempty"`
	Revision   string `json:"vcs_revision,omitempty"`
}

// Summarize sums up st, the SBOM stored for platform p.
func Summarize(p names.Platform, st *Stored) Summary {
	s := Summary{Platform: p.String(), File: st.Doc.FileName, ZipDigest: st.Doc.ZipDigest, Referrer: st.Referrer.Digest.String(), Created: st.Doc.Created}
	for _, e := range st.Doc.Executables {
		es := ExecutableSummary{Name: e.Name, SHA256: e.SHA256, Size: e.Size}
		if e.Go == nil {
			es.NotGo = e.NotGo
		} else {
			es.Go, es.GoVersion, es.MainModule, es.Modules = true, e.Go.GoVersion, e.Go.Main.Path+"@"+e.Go.Main.Version, len(e.Go.Modules())
			es.Revision = e.Go.Settings["vcs.revision"]
		}
		s.Executables = append(s.Executables, es)
	}
	return s
}

// Text is s for people, a line for the document and one per executable.
func (s Summary) Text() string {
	lines := []string{fmt.Sprintf("%s: %s (%s), created %s, referrer %s", s.Platform, s.File, s.ZipDigest, s.Created.Format("2006-01-02T15:04:05Z"), s.Referrer)}
	for _, e := range s.Executables {
		if !e.Go {
			lines = append(lines, fmt.Sprintf("  %s: no Go build information (%s)", e.Name, e.NotGo))
			continue
		}
		line := fmt.Sprintf("  %s: %s, main module %s, %s", e.Name, e.GoVersion, e.MainModule, names.Plural(e.Modules, "module"))
		if e.Revision != "" {
			line += ", revision " + e.Revision
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
