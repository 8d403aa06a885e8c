package catalog

import "context"

// A Document is what a caller in this process (the assistants' local
// catalogue) receives of a JSON answer instead of its bytes: the Go value
// the answer would be marshalled from. It spares a marshal and the
// caller's decode of it; the request still goes through everything a
// request does (scope, rate limits, metrics), and error answers are
// written as usual. The value shares what the catalogue's caches hold:
// a caller reads it and never changes it.
type Document struct {
	value any
	set   bool
}

// Value is the document's value, when the catalogue answered with one.
func (d *Document) Value() (any, bool) { return d.value, d.set }

type documentKey struct{}

// InProcess is ctx carrying a Document for the JSON answer of a request
// made with it. Only code in this process can set a context's values: a
// request from the network never carries one.
func InProcess(ctx context.Context) (context.Context, *Document) {
	d := &Document{}
	return context.WithValue(ctx, documentKey{}, d), d
}

// HandOver gives v to the request's in-process caller, reporting whether
// there was one.
func HandOver(ctx context.Context, v any) bool {
	d, ok := ctx.Value(documentKey{}).(*Document)
	if !ok {
		return false
	}
	d.value, d.set = v, true
	return true
}
