package cli

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/app"
)

// walk calls f with every command of the table under cmd, and its path.
func walk(cmd *command, path string, f func(cmd *command, path string)) {
	f(cmd, path)
	for _, sub := range cmd.subs {
		walk(sub, path+" "+sub.name, f)
	}
}

// flagNames lists the flags of cmd as the help writes them ("--json").
func flagNames(cmd *command, path string) []string {
	fs, _ := cmd.flagSet(path)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	return names
}

func TestHelpGoesToStdoutWithTheSynopsisAndTheFlags(t *testing.T) {
	opt := testOptions(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-h"}, []string{"codexrelay serve [--listen ADDR]", "codexrelay accounts set-key NAME", "Environment:"}},
		{[]string{"--help"}, []string{"codexrelay accounts list [--json]"}},
		{[]string{"help"}, []string{"codexrelay bench proxy"}},
		{[]string{"help", "accounts", "add"}, []string{"codexrelay accounts add --name N --kind openai", "--base-url URL"}},
		{[]string{"serve", "--help"}, []string{"codexrelay serve [--listen ADDR] [--allow-remote]", "--listen ADDR", "--allow-remote"}},
		{[]string{"accounts", "-h"}, []string{"codexrelay accounts list [--json]", "codexrelay accounts move NAME --to K", "codexrelay accounts prune"}},
		{[]string{"accounts", "add", "-h"}, []string{"codexrelay accounts add --kind chatgpt [--name N] [--device]", "--name NAME", "--kind KIND", "--base-url URL", "--api API", "--device", `(default "responses")`}},
		{[]string{"accounts", "move", "x", "--to", "2", "--help"}, []string{"codexrelay accounts move NAME --to K", "--to K"}},
		{[]string{"accounts", "set-key", "-h", "x"}, []string{"codexrelay accounts set-key NAME", "stdin"}},
		{[]string{"accounts", "set-reserve", "-h"}, []string{"codexrelay accounts set-reserve NAME PERCENT", "binding window"}},
		{[]string{"bench", "--help"}, []string{"codexrelay bench serialization", "codexrelay bench catalog", "codexrelay bench proxy"}},
		{[]string{"bench", "proxy", "--help"}, []string{"codexrelay bench proxy [--in-process] [--idle-wait 60s] [--json]", "--in-process", "--idle-wait duration", "(default 1m0s)", "--json"}},
		{[]string{"settings", "--help"}, []string{"codexrelay settings ", "codexrelay settings set KEY VALUE"}},
		{[]string{"settings", "set", "-h"}, []string{"codexrelay settings set KEY VALUE", "stream-idle-timeout-ms", "round-robin"}},
		{[]string{"aliases", "-h"}, []string{"codexrelay aliases set NAME MODEL [MODEL...]", "codexrelay aliases remove NAME"}},
		{[]string{"local-key", "-h"}, []string{"codexrelay local-key on", "codexrelay local-key off", "codexrelay local-key show"}},
		{[]string{"version", "-h"}, []string{"codexrelay version [--json | --check]", "--check, ask the release feed", "(-v and --version too)", "--check", "--json"}},
		{[]string{"codex-config", "-h"}, []string{"codexrelay codex-config [--write | --remove] [--path FILE]", "--write", "--remove", "--path FILE", "SSL_CERT_FILE"}},
	} {
		code, out, errs := runCLI(t, opt, "", c.args...)
		if code != 0 || errs != "" {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: the help lacks %q:\n%s", c.args, w, out)
			}
		}
	}
}

func TestEveryCommandAnswersHelp(t *testing.T) {
	opt := testOptions(t)
	walk(root, root.name, func(cmd *command, path string) {
		for _, h := range []string{"-h", "--help"} {
			args := append(strings.Fields(path)[1:], h)
			code, out, errs := runCLI(t, opt, "", args...)
			if code != 0 || errs != "" || out != printed(cmd, path) {
				t.Errorf("%v: exit %d, stderr %q, stdout %q", args, code, errs, out)
			}
			for _, f := range flagNames(cmd, path) {
				if !strings.Contains(out, "  "+f) {
					t.Errorf("%v: the help lacks the flag %s:\n%s", args, f, out)
				}
			}
		}
	})
}

// printed is the help of cmd as printHelp writes it.
func printed(cmd *command, path string) string {
	var b strings.Builder
	printHelp(&b, cmd, path)
	return b.String()
}

func TestTheUsageListsEveryCommandOfTheTable(t *testing.T) {
	opt := testOptions(t)
	_, usage, _ := runCLI(t, opt, "", "help")
	code, _, bare := runCLI(t, opt, "")
	if code != 2 || bare != usage {
		t.Errorf("without arguments: exit %d, stderr %q", code, bare)
	}
	lines := 1 // the tray app's
	walk(root, root.name, func(cmd *command, path string) {
		if cmd.run == nil && cmd.flags == nil {
			return
		}
		listed := strings.Contains(usage, "\n  "+path+" ") || strings.Contains(usage, "\n  "+path+"\n")
		if listed == cmd.hidden {
			t.Errorf("%s: listed %v, hidden %v", path, listed, cmd.hidden)
		}
		if !cmd.hidden {
			lines += max(len(cmd.usage), 1)
		}
	})
	// Nothing else is listed: every usage line comes from the table.
	if got := strings.Count(usage, "\n  codexrelay"); got != lines {
		t.Errorf("%d usage lines, the table has %d:\n%s", got, lines, usage)
	}
	for _, path := range []string{"serve", "accounts set-key", "settings set", "aliases remove", "local-key show", "bench catalog", "version"} {
		if !strings.Contains(usage, "\n  codexrelay "+path+" ") {
			t.Errorf("the usage lacks %s:\n%s", path, usage)
		}
	}
	for _, path := range []string{"bench relay-process", "bench bare-process"} {
		if strings.Contains(usage, path) {
			t.Errorf("the usage lists the internal %s", path)
		}
	}
}

func TestUsageErrorsAreOneLineOnStderr(t *testing.T) {
	opt := testOptions(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"acounts"}, `unknown command "acounts" (did you mean "accounts"?)`},
		{[]string{"acc", "list"}, `did you mean "accounts"`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"; run 'codexrelay -h' for usage`},
		{[]string{"accounts", "lst"}, `unknown accounts sub-command "lst" (did you mean "list"?); run 'codexrelay accounts -h' for usage`},
		{[]string{"bench", "proxi"}, `did you mean "proxy"`},
		{[]string{"accounts", "list", "--jsn"}, "accounts list: unknown flag --jsn (did you mean --json?)"},
		{[]string{"serve", "--bogus"}, "serve: unknown flag --bogus"},
		{[]string{"bench", "proxy", "--idle-wait", "soon"}, `bench proxy: invalid value "soon" for --idle-wait`},
		{[]string{"serve", "--listen"}, "serve: --listen needs an argument"},
		{[]string{"accounts", "list", "--json=maybe"}, `invalid boolean value "maybe" for --json`},
		{[]string{"--verbose"}, "unknown flag --verbose"},
		{[]string{"serve", "-x"}, "serve: unknown flag -x;"},
		{[]string{"accounts"}, "accounts needs a sub-command: list, add,"},
		{[]string{"accounts", "rename", "a"}, "accounts rename needs OLD NEW; run 'codexrelay accounts rename -h' for usage"},
		{[]string{"accounts", "remove", "a", "b"}, "accounts remove takes only NAME, not 2 arguments"},
		{[]string{"accounts", "prune", "now"}, "accounts prune takes no argument"},
		{[]string{"accounts", "set-key", "a", "sk-on-argv"}, "the API key is read from stdin"},
		{[]string{"settings", "set", "strategi", "priority"}, `unknown setting "strategi" (did you mean "strategy"?)`},
		{[]string{"settings", "set", "strategy"}, "settings set needs KEY VALUE"},
		{[]string{"local-key", "maybe"}, `unknown local-key sub-command "maybe"`},
		{[]string{"version", "2"}, "version takes no argument"},
	} {
		code, out, errs := runCLI(t, opt, "", c.args...)
		if code != 2 || out != "" || !strings.HasPrefix(errs, "codexrelay: ") || strings.Count(errs, "\n") != 1 || !strings.HasSuffix(errs, "\n") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q (want one line)", c.args, code, out, errs)
		}
		if !strings.Contains(errs, c.want) {
			t.Errorf("%v: stderr %q, want %q", c.args, errs, c.want)
		}
		if strings.Contains(errs, "sk-on-argv") {
			t.Errorf("%v: echoed a key", c.args)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version", "-v"} {
		if code, out, errs := runCLI(t, testOptions(t), "", arg); code != 0 || out != "codexrelay "+app.ReadBuild().String()+"\n" || errs != "" {
			t.Errorf("%s: %d %q %q", arg, code, out, errs)
		}
	}
}

func TestFieldErrorsNameTheFlagOfTheirCommand(t *testing.T) {
	opt := testOptions(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--listen", "0.0.0.0:7455"}, `codexrelay: --listen must be a loopback address, not "0.0.0.0:7455"`},
		// rename takes the name as an argument, not as --name.
		{[]string{"accounts", "rename", "a", "../b"}, `codexrelay: account name "../b" is not valid`},
	} {
		code, _, errs := runCLI(t, opt, "", c.args...)
		if code != 2 || !strings.HasPrefix(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
}

func TestServeOnATakenPortSaysHowToPickAnother(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	code, _, errs := runCLI(t, testOptions(t), "", "serve", "--listen", addr)
	want := "codexrelay: cannot listen on " + addr + ": the port is taken (is another Codex Relay running?); `codexrelay serve --listen 127.0.0.1:PORT` picks another\n"
	if code != 1 || !strings.HasSuffix(errs, want) {
		t.Fatalf("exit %d, stderr %q, want %q", code, errs, want)
	}
}

func TestAppErrorsGetCommandLineAdvice(t *testing.T) {
	for err, want := range map[error]string{
		app.ErrNoAccount("x"):                                " (see `codexrelay accounts list`)",
		fmt.Errorf("wrapped: %w", app.ErrSignInAccount("x")): " (`codexrelay accounts add --kind chatgpt`)",
		app.ErrNameTaken("x"):                                "",
	} {
		if got := cliAdvice(err); got != want {
			t.Errorf("%v: advice %q, want %q", err, got, want)
		}
	}
}

// accounts list on a settings file that cannot be read says so and fails: "no accounts yet"
// (or an empty JSON list) would tell a script that there are none.
func TestAccountsListOnARefusedSettingsFile(t *testing.T) {
	opt := testOptions(t)
	os.WriteFile(filepath.Join(opt.ConfigDir, "settings.json"), []byte(`{"accounts": [ {"name": "half`), 0o600)
	for _, args := range [][]string{{"accounts", "list"}, {"accounts", "list", "--json"}} {
		code, out, errs := runCLI(t, opt, "", args...)
		if code != 1 || out != "" || !strings.Contains(errs, "cannot be listed") || strings.Count(errs, "corrupt") != 1 {
			t.Errorf("%v: %d %q %q", args, code, out, errs)
		}
	}
}
