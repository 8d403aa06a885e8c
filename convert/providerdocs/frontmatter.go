package providerdocs

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// frontMatter is what a page's YAML front matter says that is kept.
type frontMatter struct {
	PageTitle   any `json:"page_title"`
	Subcategory any `json:"subcategory"`
	Description any `json:"description"`
}

// parsePage splits src into its front matter (between a first line
// "---" and the next such line, as the registry reads it) and its
// Markdown, and titles it: page_title, else the first "# " heading.
func parsePage(src []byte) (Page, error) {
	fm, body, err := splitFrontMatter(src)
	if err != nil {
		return Page{}, err
	}
	var p Page
	if fm != nil {
		var m frontMatter
		if err := yaml.Unmarshal(fm, &m); err != nil {
			return Page{}, fmt.Errorf("its front matter is not YAML: %w", err)
		}
		p.Title, p.Subcategory, p.Description = text(m.PageTitle), text(m.Subcategory), text(m.Description)
	}
	p.Markdown = string(body)
	if p.Title == "" {
		p.Title = firstHeading(p.Markdown)
	}
	return p, nil
}

// splitFrontMatter is src's front matter (nil without one) and the rest.
func splitFrontMatter(src []byte) (fm, body []byte, err error) {
	rest, ok := cutLine(src, "---")
	if !ok {
		return nil, src, nil
	}
	for off := 0; off < len(rest); {
		line, next, _ := bytes.Cut(rest[off:], []byte("\n"))
		if strings.TrimRight(string(line), " \t\r") == "---" {
			return rest[:off], next, nil
		}
		off += len(line) + 1
		if off > MaxFrontMatter {
			return nil, nil, fmt.Errorf("its front matter is longer than %d bytes", MaxFrontMatter)
		}
	}
	return nil, nil, errors.New("its front matter (from its first line, ---) has no closing --- line")
}

// cutLine is src after its first line when that line is want (trailing
// blanks and \r aside).
func cutLine(src []byte, want string) ([]byte, bool) {
	line, rest, found := bytes.Cut(src, []byte("\n"))
	if !found || strings.TrimRight(string(line), " \t\r") != want {
		return nil, false
	}
	return rest, true
}

// text is a front matter value as text: a string, a number or a
// boolean; "" for anything else.
func text(v any) string {
	switch v := v.(type) {
	case string:
		return strings.TrimSpace(v)
	case float64, bool, int, int64:
		return fmt.Sprint(v)
	}
	return ""
}

// firstHeading is the text of the first ATX level-1 heading, or "".
func firstHeading(md string) string {
	inFence := false
	for line := range strings.Lines(md) {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(t, "# ") {
			return strings.TrimSpace(strings.Trim(strings.TrimSpace(t[2:]), "#"))
		}
	}
	return ""
}
