package pool

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docs/routing.md lists every code of CodeClasses, saying what its class does, and no other.
func TestRoutingDocListsEveryCode(t *testing.T) {
	b, err := os.ReadFile("../../docs/routing.md")
	if err != nil {
		t.Fatal(err)
	}
	says := map[Class]string{Limited: "limit:", Flaky: "transient:", Unsealed: "sealed:", SocketEnded: "socket:", LostPrevious: "socket:"}
	row := regexp.MustCompile("(?m)^\\| `([a-z_*]+)` \\| (.+) \\|$")
	listed := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		code, what := m[1], m[2]
		listed[code] = true
		cl, sc := CodeClass(strings.TrimSuffix(code, "*"))
		if code == "workspace_*" {
			if cl != Limited || sc != WorkspaceScope {
				t.Errorf("the doc lists %s as a workspace limit: the judge does not", code)
			}
			continue
		}
		if _, ok := CodeClasses[code]; !ok {
			t.Errorf("the doc lists %s: CodeClasses has no such code", code)
			continue
		}
		if !strings.HasPrefix(what, says[cl]) {
			t.Errorf("the doc says %s: %q; its class says %q", code, what, says[cl])
		}
	}
	for code := range CodeClasses {
		if code != "" && !listed[code] {
			t.Errorf("CodeClasses has %s: docs/routing.md does not list it", code)
		}
	}
	if !listed["workspace_*"] {
		t.Error("docs/routing.md does not list the workspace_* limits")
	}
}
