package sbom

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Output is what `oci-tofu sbom` does with a version's SBOMs: write each
// into Dir, named after its zip; print their Summary; or else print the
// one SPDX document asked for.
type Output struct {
	Dir     string
	Summary bool
}

// Print reads the SBOM of each of platforms in sv (tagged, as the user
// named it; reference, in full, for the summary) and does with it what
// out says, printing to rep.
func (sv *StoredVersion) Print(ctx context.Context, tagged, reference string, platforms []names.Platform, out Output, rep *report.Reporter) error {
	var summaries []Summary
	var human []string
	for _, p := range platforms {
		st, err := sv.Read(ctx, p)
		if errors.Is(err, ErrNoSBOM) {
			return fmt.Errorf("%s %w (oci-tofu sbom --backfill stores one)", tagged, err)
		}
		if err != nil {
			return err
		}
		switch {
		case out.Summary:
			s := Summarize(p, st)
			summaries, human = append(summaries, s), append(human, s.Text())
		case out.Dir != "":
			if err := st.writeInto(rep, out.Dir); err != nil {
				return err
			}
		default:
			_, err := rep.Out.Write(st.SPDX)
			return err
		}
	}
	if out.Summary {
		return rep.Result(map[string]any{"reference": reference, "platforms": summaries}, strings.Join(human, "\n"))
	}
	return nil
}

// writeInto writes st into dir, named after its zip, and tells rep.
func (st *Stored) writeInto(rep *report.Reporter, dir string) error {
	name := filepath.Join(dir, strings.TrimSuffix(st.Doc.FileName, ".zip")+".spdx.json")
	if err := os.WriteFile(name, st.SPDX, 0o644); err != nil {
		return err
	}
	rep.Infof("wrote %s", name)
	return nil
}
