package proxy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// doc.go's index names every file of the package and every package below it, and nothing
// else: a file added, moved or removed changes the index in the same commit.
func TestTheDocIndexNamesEveryFile(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`^//\t(\S+\.go(?:, \S+\.go)*) {2,}\S`)
	named := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, f := range strings.Split(m[1], ", ") {
			if named[f] {
				t.Errorf("%s is in the index twice", f)
			}
			named[f] = true
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

	text := strings.Join(strings.Fields(string(doc)), " ")
	dirs, _ := os.ReadDir(".")
	below := map[string]bool{}
	for _, d := range dirs {
		if d.IsDir() && d.Name() != "testdata" {
			below["proxy/"+d.Name()] = true
			if !strings.Contains(text, "proxy/"+d.Name()+" ") {
				t.Errorf("doc.go does not say what proxy/%s is", d.Name())
			}
		}
	}
	for _, m := range regexp.MustCompile(`\bproxy/([a-z]+)\b`).FindAllString(text, -1) {
		if !below[m] {
			t.Errorf("doc.go names %s: there is no such package", m)
		}
	}
}
