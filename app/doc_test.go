package app

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
	var patterns []string
	for _, line := range strings.Split(string(doc), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			patterns = append(patterns, strings.Split(m[1], ", ")...)
		}
	}
	if len(patterns) == 0 {
		t.Fatal("doc.go has no index")
	}
	files, _ := filepath.Glob("*.go")
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
	named := map[string]string{}
	for _, p := range patterns {
		n := 0
		for _, f := range files {
			if ok, _ := filepath.Match(p, f); ok {
				n++
				if by, twice := named[f]; twice {
					t.Errorf("%s is in the index twice (%s, %s)", f, by, p)
				}
				named[f] = p
			}
		}
		if n == 0 {
			t.Errorf("the index names %s: no file of the package is", p)
		}
	}
	for _, f := range files {
		if _, ok := named[f]; !ok {
			t.Errorf("%s is not in doc.go's index", f)
		}
	}

	// The packages below: each folder with Go files is named as app/NAME, and each named is one.
	text := strings.Join(strings.Fields(string(doc)), " ")
	dirs, _ := os.ReadDir(".")
	below := map[string]bool{}
	for _, d := range dirs {
		if gos, _ := filepath.Glob(filepath.Join(d.Name(), "*.go")); d.IsDir() && len(gos) > 0 {
			below["app/"+d.Name()] = true
			if !strings.Contains(text, "app/"+d.Name()+" ") {
				t.Errorf("doc.go does not say what app/%s is", d.Name())
			}
		}
	}
	for _, m := range regexp.MustCompile(`\bapp/([a-z]+)\b`).FindAllString(text, -1) {
		if !below[m] {
			t.Errorf("doc.go names %s: there is no such package", m)
		}
	}
}
