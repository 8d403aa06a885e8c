// Package modulesource resolves a module version at an origin module
// registry as tofu does (service discovery modules.v1, the versions and
// download endpoints; docs/reference.md §6) and fetches its source with
// tofu's module-source semantics — git over HTTPS (`git::https://…`,
// `github.com/…`, `?ref=`, `//subdir`, shallow where the ref allows) and
// archives (`.zip`, `.tar.gz`, `.tgz`, `?archive=`) — into a directory
// that `push module` would pack (convert/modulepkg).
//
// It owns the trust boundary of the fetch: only allow-listed hosts are
// contacted, for the registry and for every source URL it returns, each
// request (redirects included) checked before a connection is made; no
// credential is sent to any host but the registry's own; every download
// is bounded; archives are unpacked with zip-slip, link, size and
// file-count checks, and the tree then goes through modulepkg's checks.
// See docs/modules.md, "Pull-through".
package modulesource

import (
	"errors"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
)

// Limits of a fetch: what is downloaded (archive or git pack) and what is
// written to disk are both bounded by a module package's limits.
const (
	MaxDownload = modulepkg.MaxSize
	MaxFiles    = modulepkg.MaxFiles
	MaxTreeSize = modulepkg.MaxSize
)

// ErrRefused marks a fetch refused for what the origin answered: a host
// outside the allow-list, an unsupported source address, or a hostile
// tree (unsafe names, links out of the tree, too large, too many files).
var ErrRefused = errors.New("refused")
