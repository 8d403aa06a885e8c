package tofudl

import (
	"strings"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

// The TofuDL mirror's download paths.

// TofuDownloadRequest is a parsed TofuDL download path below
// /tofu/download/: v:version/:artifact.
type TofuDownloadRequest struct {
	Version  names.Version
	Artifact string
}

// ParseTofuDownloadPath parses the escaped path below the download prefix.
func ParseTofuDownloadPath(escaped string) (TofuDownloadRequest, error) {
	seg, err := respond.SplitPath(escaped, 2)
	if err != nil {
		return TofuDownloadRequest{}, err
	}
	vs, ok := strings.CutPrefix(seg[0], "v")
	if !ok {
		return TofuDownloadRequest{}, respond.BadPath("want v<version>/<artifact>, got %q", seg[0])
	}
	v, err := names.ParseTofuVersion(vs)
	if err != nil {
		return TofuDownloadRequest{}, respond.BadPath("%v", err)
	}
	if !names.ValidTofuArtifact(seg[1]) {
		return TofuDownloadRequest{}, respond.BadPath("invalid artifact name %q", seg[1])
	}
	return TofuDownloadRequest{Version: v, Artifact: seg[1]}, nil
}
