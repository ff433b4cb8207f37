package app_test

import (
	"io"
	"os"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/cli"
)

func init() {
	app.RunCLI = func(stdin io.Reader, stdout, stderr io.Writer, opt app.Options, signals <-chan os.Signal, args []string) int {
		c := &cli.CLI{Stdin: stdin, Stdout: stdout, Stderr: stderr, Options: opt, Signals: signals}
		return c.Run(args)
	}
}
