package app

import (
	"io"
	"os"
)

// RunCLI runs the command line (package app/cli) on opt and returns its exit code. The CLI is a
// front end above app, so app's own tests cannot import it; clilink_test.go, an external test
// of this package (which may), sets RunCLI before any test runs, and app's tests drive the app
// through the same commands a user types.
var RunCLI func(stdin io.Reader, stdout, stderr io.Writer, opt Options, signals <-chan os.Signal, args []string) int

// testCLI is a command line as the tests set it up.
type testCLI struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Options        Options
	Signals        <-chan os.Signal
}

func (c *testCLI) Run(args []string) int {
	return RunCLI(c.Stdin, c.Stdout, c.Stderr, c.Options, c.Signals, args)
}
