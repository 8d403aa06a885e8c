package lockfile

import (
	"fmt"

	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// reportResult is `lock --json`'s output.
type reportResult struct {
	LockFile  string     `json:"lock_file"`
	For       string     `json:"for"`
	Modules   int        `json:"modules"`
	Providers []Provider `json:"providers"`
}

// Report prints what was locked into f, written at lockPath for client
// (why: how the client was chosen) from cfg: a line per provider with its
// hashes, a warning for each the policy deprecates; or with rep.JSON the
// result.
func (f *File) Report(rep *report.Reporter, lockPath string, client tfconfig.Client, why string, cfg *tfconfig.Config) error {
	res := reportResult{LockFile: lockPath, For: string(client), Modules: len(cfg.Modules), Providers: make([]Provider, 0, len(f.Providers))}
	human := fmt.Sprintf("wrote %s for %s (%s), %s read:", lockPath, client, why, names.Plural(len(cfg.Modules), "module"))
	for _, p := range f.Providers {
		if p.Deprecated != "" { // --json carries it in the provider
			rep.Warn(p.Address+" "+p.Version, []string{"deprecated by the policy: " + p.Deprecated})
		}
		p.Hashes = SortedUnique(p.Hashes)
		res.Providers = append(res.Providers, p)
		human += fmt.Sprintf("\n  %s %s (%d hashes)", p.Address, p.Version, len(p.Hashes))
	}
	if len(f.Providers) == 0 {
		human += "\n  (the configuration requires no provider)"
	}
	return rep.Result(res, human)
}
