package catalog

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// OpenTofu releases in the catalogue: the index's entry and the
// releases' page, read through the catalogue's OpenTofu source (what the
// repository holds, judged as TofuDL judges it, nothing pulled
// through), within the scope TofuDL asks of a client (tofu = true).

// tofuName is what the index's search matches of the OpenTofu entry.
const tofuName = "opentofu"

// TofuEntry is the OpenTofu releases' entry in the index.
type TofuEntry struct {
	// URL is the releases' page, relative to the index.
	URL string `json:"url"`
	// Latest is the newest stable release served (the newest pre-release
	// when there is none, "" when none is served); Versions how many
	// are served.
	Latest   string `json:"latest"`
	Versions int    `json:"versions"`
}

// TofuPage is the OpenTofu releases' page: every release served, newest
// first, and the one shown (Version: the latest by default) with its
// files and how to install it through the proxy.
type TofuPage struct {
	Version  string        `json:"version"`
	Latest   string        `json:"latest"`
	Versions []TofuVersion `json:"versions"`
	// Files are the version's release files, with their download URLs.
	Files   []TofuFile  `json:"files"`
	Install TofuInstall `json:"install"`
	Base    string      `json:"-"`
}

// TofuVersion is one release served and its platforms (OS_ARCH, from
// its archives' names).
type TofuVersion struct {
	Version   string   `json:"version"`
	Platforms []string `json:"platforms"`
	// URL is its page, relative to the index.
	URL string `json:"url"`
}

// TofuFile is one file of a release.
type TofuFile struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// TofuInstall is how to install a release through the proxy: the TofuDL
// API URL and download URL template clients are given (docs/tofudl.md),
// and a shell script for the version shown.
type TofuInstall struct {
	APIURL              string `json:"api_url"`
	DownloadURLTemplate string `json:"download_url_template"`
	Script              string `json:"script"`
}

// tofuReadable reports whether the caller may read OpenTofu releases,
// through the scope filter modules and providers go through.
func (h *Handlers) tofuReadable(ctx context.Context) (bool, error) {
	ok, err := readable(ctx, h, names.KindTofu, []tofuAddress{{}})
	return len(ok) == 1, err
}

// tofuAddress is the address TofuDL asks a client's scope about: none.
type tofuAddress struct{}

func (tofuAddress) String() string { return "" }

// tofuEntry is the index's OpenTofu entry: nil when no releases are
// served here, the caller may not read them, or q or f leaves them out
// (namespace and provider filters name none; status: served only, as
// TofuDL lists only what it serves).
func (h *Handlers) tofuEntry(ctx context.Context, q string, f Filters) (*TofuEntry, error) {
	if h.Tofu == nil || f.Namespace != "" || f.Provider != nil || f.Status != "" && f.Status != StatusServed {
		return nil, nil
	}
	for _, w := range strings.Fields(strings.ToLower(q)) {
		if !strings.Contains(tofuName, w) {
			return nil, nil
		}
	}
	if ok, err := h.tofuReadable(ctx); !ok || err != nil {
		return nil, err
	}
	rels, err := h.tofuReleases(ctx)
	if err != nil || f.Status != "" && len(rels) == 0 {
		return nil, err
	}
	return &TofuEntry{URL: "tofu", Latest: latestTofu(rels), Versions: len(rels)}, nil
}

// tofuReleases are the releases served, newest first (as api.json lists
// them: a release denied, gone or not a valid release artifact is left
// out).
func (h *Handlers) tofuReleases(ctx context.Context) ([]*source.TofuEntry, error) {
	l, err := h.Tofu.TofuVersions(ctx)
	if err != nil {
		return nil, err
	}
	vs := make(names.VersionList, len(l.Versions))
	for i, e := range l.Versions {
		vs[i] = e.Version
	}
	rels := make([]*source.TofuEntry, len(vs))
	err = h.Out.Store.EachVersion(ctx, vs, func(ctx context.Context, i int, v names.Version) error {
		rel, err := h.Tofu.TofuRelease(ctx, v)
		if err == nil && rel.Root == nil {
			rel = nil // offered by an origin, not held
		}
		rels[i] = rel // each index by one goroutine
		return h.Out.LeftOut("OpenTofu", v, err)
	})
	if err != nil {
		return nil, err
	}
	rels = slices.DeleteFunc(rels, func(r *source.TofuEntry) bool { return r == nil })
	sort.SliceStable(rels, func(i, j int) bool {
		return names.CompareTofuVersions(rels[i].Version.String(), rels[j].Version.String()) > 0
	})
	return rels, nil
}

// latestTofu is the newest stable release of rels (newest first), else
// the newest pre-release; "" for none.
func latestTofu(rels []*source.TofuEntry) string {
	for _, r := range rels {
		if r.Version.Prerelease == "" {
			return r.Version.String()
		}
	}
	if len(rels) > 0 {
		return rels[0].Version.String()
	}
	return ""
}

// tofuPlatforms are the platforms of a release's archives
// (tofu_VERSION_OS_ARCH.zip or .tar.gz), sorted.
func tofuPlatforms(rel *source.TofuEntry) []string {
	prefix := "tofu_" + rel.Version.String() + "_"
	out := []string{}
	for _, f := range rel.Files {
		rest, ok := strings.CutPrefix(f, prefix)
		if !ok {
			continue
		}
		if s, ok := strings.CutSuffix(rest, ".zip"); ok {
			rest = s
		} else if s, ok := strings.CutSuffix(rest, ".tar.gz"); ok {
			rest = s
		} else {
			continue
		}
		if p, err := names.ParsePlatform(rest); err == nil && !slices.Contains(out, p.String()) {
			out = append(out, p.String())
		}
	}
	slices.Sort(out)
	return out
}

func (h *Handlers) serveTofuPage(w http.ResponseWriter, r *http.Request, req Request) {
	if h.Tofu == nil {
		respond.WriteError(w, r, http.StatusBadRequest, "this server serves no OpenTofu releases (--tofu-repository)")
		return
	}
	if c := respond.ReaderOf(r.Context()); c != nil && !h.Out.InScope(w, r, c, names.KindTofu, "") {
		return
	}
	base, err := h.Out.BaseFor(r)
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	d, err := h.tofuPage(r.Context(), req, base)
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	write(h, w, r, d, h.RenderTofu)
}

// tofuPage builds req's page; base is the proxy's base URL
// (respond.Responder.BaseFor: absolute where it is known).
func (h *Handlers) tofuPage(ctx context.Context, req Request, base string) (TofuPage, error) {
	rels, err := h.tofuReleases(ctx)
	if err != nil {
		return TofuPage{}, err
	}
	latest := latestTofu(rels)
	if latest == "" {
		return TofuPage{}, source.NotFoundf("no OpenTofu release is served here")
	}
	shown := latest
	if req.Version != nil {
		shown = req.Version.String()
	}
	d := TofuPage{Version: shown, Latest: latest, Versions: make([]TofuVersion, len(rels)), Files: []TofuFile{}, Base: "./"}
	if req.Version != nil {
		d.Base = "../" // tofu/VERSION
	}
	var rel *source.TofuEntry
	for i, e := range rels {
		d.Versions[i] = TofuVersion{Version: e.Version.String(), Platforms: tofuPlatforms(e), URL: "tofu/" + e.Version.String()}
		if e.Version.String() == shown {
			rel = e
		}
	}
	if rel == nil {
		return TofuPage{}, source.NotFoundf("OpenTofu %s is not served here", shown)
	}
	download := strings.TrimSuffix(base, "/") + h.TofuDownload
	for _, f := range rel.Files {
		d.Files = append(d.Files, TofuFile{Name: f, URL: download + "v" + shown + "/" + f})
	}
	d.Install = tofuInstall(strings.TrimSuffix(base, "/")+h.TofuAPI, download, shown, tofuPlatforms(rel))
	return d, nil
}

// tofuInstall is how to install version v (with platforms) through the
// proxy whose API document is at api and downloads below download.
func tofuInstall(api, download, v string, platforms []string) TofuInstall {
	tpl := download + "v{{ .Version }}/{{ .Artifact }}"
	script := "# tofudl (go install github.com/opentofu/tofudl/cmd/tofudl@latest)\n" +
		"export TOFUDL_API_URL=" + api + "\n" +
		"export TOFUDL_DOWNLOAD_MIRROR_URL_TEMPLATE='" + tpl + "'\n" +
		"tofudl --version " + v + " --output /usr/local/bin/tofu\n"
	if len(platforms) > 0 {
		pl := platforms[0]
		if slices.Contains(platforms, "linux_amd64") {
			pl = "linux_amd64"
		}
		script += "\n# or by hand (" + pl + "), checked against OpenTofu's signed SHA256SUMS\n" +
			"V=" + v + "\n" +
			"curl -fsSLO " + download + "v$V/tofu_${V}_" + pl + ".tar.gz\n" +
			"curl -fsSLO " + download + "v$V/tofu_${V}_SHA256SUMS\n" +
			"curl -fsSLO " + download + "v$V/tofu_${V}_SHA256SUMS.gpgsig\n" +
			"gpg --verify tofu_${V}_SHA256SUMS.gpgsig tofu_${V}_SHA256SUMS\n" +
			"sha256sum --ignore-missing -c tofu_${V}_SHA256SUMS\n"
	}
	return TofuInstall{APIURL: api, DownloadURLTemplate: tpl, Script: script}
}
