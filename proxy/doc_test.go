package proxy

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// doc.go's index names every file of the package and every package below it, and nothing
// else: a file added, moved or removed changes the index in the same commit. proxy/pool's
// doc.go is held the same way.
func TestTheDocIndexNamesEveryFile(t *testing.T) {
	for _, dir := range []string{".", "pool"} {
		checkDocIndex(t, dir)
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
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

// checkDocIndex holds the index of dir's doc.go (its rows: "//<tab>a.go, b.go  what they
// are") to the Go files of dir, both ways.
func checkDocIndex(t *testing.T, dir string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(dir, "doc.go"))
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
				t.Errorf("%s: %s is in the index twice", dir, f)
			}
			named[f] = true
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if f = filepath.Base(f); strings.HasSuffix(f, "_test.go") {
			continue
		}
		if !named[f] {
			t.Errorf("%s: %s is not in doc.go's index", dir, f)
		}
		delete(named, f)
	}
	for f := range named {
		t.Errorf("%s: the index names %s: no file of the package is", dir, f)
	}
}
