package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/app"
)

// testOptions opens the app on a settings folder of the test's own, with no keychain and no
// environment.
func testOptions(t *testing.T) app.Options {
	return app.Options{ConfigDir: t.TempDir(), Getenv: func(string) string { return "" }}
}

// runCLI runs `codexrelay args...` with stdin and returns its exit code and output.
func runCLI(t *testing.T, opt app.Options, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	c := &CLI{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Options: opt}
	code = c.Run(args)
	return code, out.String(), errb.String()
}
