package pool

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// doc.go's index names every file of the package, and nothing else.
func TestTheDocIndexNamesEveryFile(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`^//\t(\S+\.go) {2,}\S`)
	named := map[string]bool{"doc.go": true}
	for _, line := range strings.Split(string(doc), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			named[m[1]] = true
		}
	}
	files, _ := filepath.Glob("*.go")
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
	for _, f := range files {
		if !named[f] {
			t.Errorf("%s is not in doc.go's index", f)
		}
		delete(named, f)
	}
	for f := range named {
		t.Errorf("the index names %s: no file of the package is", f)
	}
}
