package readme

import "html/template"

type Options struct {
	Dir   string
	Link  func(string) string
	Image func(string) string
}

func Render(markdown []byte, o Options) template.HTML {
	return template.HTML(template.HTMLEscapeString(string(markdown)))
}
