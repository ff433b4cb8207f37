package proxy

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of the package may be, from its func line to its
// closing brace: a longer one does too much to be read at once.
const maxFuncLines = 70

// maxSealedLines is the longest sealed.go may be (issue 51).
const maxSealedLines = 400

// No function of the package, or of the pool's (proxy/pool), is longer than maxFuncLines.
func TestNoFunctionIsTooLong(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	inPool, err := filepath.Glob("pool/*.go")
	if err != nil || len(inPool) == 0 {
		t.Fatalf("no files in pool/: %v", err)
	}
	names = append(names, inPool...)
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var body *ast.BlockStmt
			what := "a function literal"
			switch fn := n.(type) {
			case *ast.FuncDecl:
				body, what = fn.Body, fn.Name.Name
			case *ast.FuncLit:
				body = fn.Body
			}
			if body == nil {
				return true
			}
			lines := fset.Position(body.Rbrace).Line - fset.Position(n.Pos()).Line + 1
			if lines > maxFuncLines {
				t.Errorf("%s: %s is %d lines long, more than %d: split it", fset.Position(n.Pos()), what, lines, maxFuncLines)
				return false
			}
			return true
		})
	}
}

// sealed.go stays short enough to read: its input edits are sealedit.go.
func TestSealedGoIsShort(t *testing.T) {
	b, err := os.ReadFile("sealed.go")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n > maxSealedLines {
		t.Errorf("sealed.go is %d lines long, more than %d", n, maxSealedLines)
	}
}

// An exchange keeps to a few groups of what a request owns (handler.go): at most 12 fields.
func TestExchangeStaysSmall(t *testing.T) {
	if n := reflect.TypeFor[exchange]().NumField(); n > 12 {
		t.Errorf("exchange has %d fields, more than 12: group what a phase owns, or pass it as a value", n)
	}
}
