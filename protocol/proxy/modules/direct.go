package modules

import (
	"net/http"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

// Module downloads for clients that fetch the package themselves
// (docs/reference.md §6): OpenTofu 1.12 and later read the download
// answer's use_registry_credentials and then fetch its location directly,
// sending the credentials they hold for the proxy's host. They get the
// archive's plain URL, authorised by their bearer token as every other
// request is; Terraform and older tofu hand the location to go-getter,
// which sends no credentials, so they get X-Terraform-Get with a signed
// URL when client authentication is on.

// fetchesModulesDirectly reports whether the client is OpenTofu 1.12 or
// later, by its User-Agent ("OpenTofu/1.12.6", maybe followed by what
// TF_APPEND_USER_AGENT adds).
func fetchesModulesDirectly(r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.Header.Get("User-Agent"), "OpenTofu/")
	if !ok {
		return false
	}
	v, err := names.ParseVersionLoose(strings.Fields(rest + " ")[0])
	if err != nil {
		return false
	}
	return v.Major > 1 || v.Major == 1 && v.Minor >= 12
}

// serveDirectLocation answers the download endpoint for a client that
// fetches the package itself, with its credentials for this host.
func serveDirectLocation(w http.ResponseWriter, r *http.Request, loc string) {
	yes := true
	w.Header().Set("Cache-Control", "no-store")
	respond.WriteJSON(w, r, wire.ModuleLocation{Location: loc, UseRegistryCredentials: &yes})
}
