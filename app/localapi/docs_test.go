package localapi

import (
	"os"
	"strings"
	"testing"
)

// docs/local-api.md lists the route table, in its order: each route's method and path, the
// query it reads and what its caller must prove.
func TestTheLocalAPIPageListsEveryRoute(t *testing.T) {
	b, err := os.ReadFile("../../docs/local-api.md")
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `GET ") && !strings.HasPrefix(line, "| `POST ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|") // no cell of this table holds a |
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		got = append(got, cells[:3])
	}
	caller := map[Proof]string{ProofNone: "port", ProofKey: "key", ProofFolder: "signed"}
	rts := Routes()
	for i, rt := range rts {
		want := []string{"`" + rt.Method + " " + rt.Path + "`", "", caller[rt.Proof]}
		if rt.Query != "" {
			want[1] = "`" + rt.Query + "`"
		}
		if i >= len(got) || strings.Join(got[i], " | ") != strings.Join(want, " | ") {
			var g []string
			if i < len(got) {
				g = got[i]
			}
			t.Errorf("docs/local-api.md's route %d: %q, the table's: %q", i+1, g, want)
		}
	}
	if len(got) != len(rts) {
		t.Errorf("docs/local-api.md lists %d routes, the table has %d", len(got), len(rts))
	}
}
