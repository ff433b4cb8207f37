package cli

import (
	"os"
	"strings"
	"testing"
)

// docs/command-line.md's command table lists exactly the synopses `codexrelay help` prints, in
// its order: a command added, removed or given a new flag changes the page in the same commit.
func TestTheCommandLinePageListsEverySynopsis(t *testing.T) {
	want := []string{root.name} // the tray app
	var walkList func(cmd *command, path string)
	walkList = func(cmd *command, path string) {
		if cmd != root && (cmd.flags != nil || cmd.run != nil) {
			forms := cmd.usage
			if len(forms) == 0 {
				forms = []string{cmd.args}
			}
			for _, form := range forms {
				want = append(want, strings.TrimSpace(path+" "+form))
			}
		}
		for _, sub := range cmd.subs {
			if !sub.hidden {
				walkList(sub, path+" "+sub.name)
			}
		}
	}
	walkList(root, root.name)

	b, err := os.ReadFile("../../docs/command-line.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	text = text[strings.Index(text, "\n## Commands\n"):]
	var got []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| `codexrelay") {
			continue
		}
		cell := strings.TrimPrefix(line, "| `")
		cell = cell[:strings.Index(cell, "` |")]
		got = append(got, strings.ReplaceAll(cell, `\|`, "|"))
	}
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("docs/command-line.md's command %d: %q, the command table's: %q", i+1, g, w)
		}
	}
}
