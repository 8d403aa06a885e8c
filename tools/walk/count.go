package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"sort"
	"strings"
)

// entered is what one walk entered: the functions of each file.
type entered struct{ files map[string]map[string]bool }

func newEntered() *entered { return &entered{files: map[string]map[string]bool{}} }

// counted reports whether a walk counts file: test helpers (internal/,
// _test files) are not what a newcomer follows.
func counted(file string) bool {
	return !strings.HasPrefix(file, "internal/") && !strings.HasSuffix(file, "_test.go")
}

func (e *entered) add(file, function string) {
	if e.files[file] == nil {
		e.files[file] = map[string]bool{}
	}
	e.files[file][function] = true
}

// inSeam reports whether file is of the proxy's seam.
func inSeam(file string) bool {
	return strings.HasPrefix(file, "protocol/proxy/") || strings.HasPrefix(file, "protocol/source/")
}

// seam is the number of files entered in the seam.
func (e *entered) seam() int {
	n := 0
	for f := range e.files {
		if inSeam(f) {
			n++
		}
	}
	return n
}

// functions is the number of functions entered.
func (e *entered) functions() int {
	n := 0
	for _, fns := range e.files {
		n += len(fns)
	}
	return n
}

func (e *entered) over(b budget) bool {
	return b.files > 0 && len(e.files) > b.files || b.seam > 0 && e.seam() > b.seam
}

// summary is w's line: each measure beside its budget.
func (e *entered) summary(w walk) string {
	return fmt.Sprintf("%s: %d files%s, seam %d%s, %d functions", w.name,
		len(e.files), limit(" (budget %d)", w.budget.files), e.seam(), limit(" (%d)", w.budget.seam), e.functions())
}

// limit is n in format, or nothing when n leaves the measure unbounded.
func limit(format string, n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(format, n)
}

// list writes the files entered, seam files marked, each with its number
// of functions, and with funcs the functions' names.
func (e *entered) list(w io.Writer, funcs bool) {
	for _, f := range sorted(e.files) {
		mark := " "
		if inSeam(f) {
			mark = "*"
		}
		fmt.Fprintf(w, "  %s %s (%d)\n", mark, f, len(e.files[f]))
		if funcs {
			for _, fn := range sorted(e.files[f]) {
				fmt.Fprintf(w, "        %s\n", fn)
			}
		}
	}
}

func sorted[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sources finds the function a line belongs to, parsing each file once.
type sources struct{ decls map[string][]span }

// span is the lines of one function's declaration.
type span struct {
	name       string
	start, end int
}

func newSources() *sources { return &sources{decls: map[string][]span{}} }

// function is the name of the function declared around line of file
// (methods as Type.Method; a function literal belongs to the function
// around it), or "(package level)" for a variable's initializer.
func (s *sources) function(file string, line int) (string, error) {
	spans, ok := s.decls[file]
	if !ok {
		var err error
		if spans, err = parseSpans(file); err != nil {
			return "", err
		}
		s.decls[file] = spans
	}
	for _, sp := range spans {
		if sp.start <= line && line <= sp.end {
			return sp.name, nil
		}
	}
	return "(package level)", nil
}

func parseSpans(file string) ([]span, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var spans []span
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			spans = append(spans, span{funcName(fd), fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line})
		}
	}
	return spans, nil
}

// funcName is fd's name, a method's with its receiver's type.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}
