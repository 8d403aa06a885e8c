package modulepkg

import (
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ReportPrepared tells rep what became of the source before anything
// is pushed: checked, packed, or unchanged since it was packed.
func (p *Package) ReportPrepared(rep *report.Reporter) {
	counts := names.Plural(p.Files, "file") + ", " + names.Plural(int(p.Size), "byte")
	switch p.How {
	case Checked:
		rep.Infof("checked %s: %s, %s", p.Source, counts, p.Digest)
	case Packed:
		rep.Infof("packed %s: %s, %s", p.Source, counts, p.Digest)
	case Unchanged:
		rep.Infof("unchanged since it was packed as %s", p.Digest)
	}
}

// ReportPushed prints the push of p to ref under tags (res): the
// pushed line and, in a registry, the source address to write in a
// module block; or with rep.JSON what was pushed.
func (p *Package) ReportPushed(rep *report.Reporter, ref oci.Reference, tags []string, res oci.PushResult) error {
	tag := tags[0]
	primary := ref.WithReference(tag)
	human := report.PushedLine(primary, res)
	result := map[string]any{
		"reference":      primary.String(),
		"digest":         res.Root.Digest.String(),
		"tags":           tags,
		"zip_digest":     p.Digest.String(),
		"zip_size":       p.Size,
		"files":          p.Files,
		"up_to_date":     res.UpToDate,
		"uploaded":       res.Uploaded,
		"skipped":        res.Skipped,
		"uploaded_bytes": res.UploadedBytes,
	}
	if !ref.Layout {
		src := "oci://" + ref.Name() + "?tag=" + tag
		result["source"] = src
		result["source_digest"] = "oci://" + ref.Name() + "?digest=" + res.Root.Digest.String()
		human += "\n  source = \"" + src + "\""
	}
	return rep.Result(result, human)
}
