package app

import (
	"os"
	"strings"
	"testing"
)

// docTable is the rows of the first Markdown table under the heading, each row its cells
// (trimmed, code spans as they are written).
func docTable(t *testing.T, path, heading string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no heading %q", path, heading)
	}
	var rows [][]string
	for _, line := range strings.Split(text[i+len(heading)+2:], "\n") {
		if strings.HasPrefix(line, "#") || (len(rows) > 0 && !strings.HasPrefix(line, "|")) {
			break
		}
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|") // no cell of these tables holds a |
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, cells)
	}
	return rows[1:] // the header row
}

// docs/settings.md lists every row of the settings table, in its order, with the help text
// `settings set -h` prints and the value a new settings folder shows.
func TestTheSettingsPageListsEveryRow(t *testing.T) {
	a, err := Open(Options{ConfigDir: t.TempDir(), Keychain: Keychain{Service: "codexrelay-test-unused"}, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	rows := docTable(t, "../docs/settings.md", "## The settings")
	for i, st := range SettingsTable {
		want := []string{"`" + string(st.Name) + "`", "`" + st.Show(a) + "`", st.Help}
		if i >= len(rows) {
			t.Errorf("docs/settings.md lacks %s: %q", st.Name, want)
			continue
		}
		if strings.Join(rows[i], " | ") != strings.Join(want, " | ") {
			t.Errorf("docs/settings.md's row %d:\n  %q\nthe table's:\n  %q", i+1, rows[i], want)
		}
	}
	if len(rows) > len(SettingsTable) {
		t.Errorf("docs/settings.md lists %d settings, the table has %d", len(rows), len(SettingsTable))
	}
}
