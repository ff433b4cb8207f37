package cli

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/proxy"
)

// noStdin fails the test that reads it: a usage error is told before stdin is read.
type noStdin struct{ t *testing.T }

func (r noStdin) Read([]byte) (int, error) {
	r.t.Error("stdin was read")
	return 0, os.ErrClosed
}

func runNoStdin(t *testing.T, opt app.Options, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	c := &CLI{Stdin: noStdin{t}, Stdout: &out, Stderr: &errb, Options: opt}
	return c.Run(args), out.String(), errb.String()
}

// oneUsageLine checks a usage error: exit 2, nothing on stdout, one line on stderr that points
// at the command's help.
func oneUsageLine(t *testing.T, args []string, code int, out, errs string) {
	t.Helper()
	if code != 2 || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "codexrelay: ") || !strings.Contains(errs, "-h' for usage") {
		t.Errorf("%v: exit %d, stdout %q, stderr %q (want one usage line, exit 2)", args, code, out, errs)
	}
}

// Every command: an unknown flag, too many or too few arguments are usage errors, told in one
// line before anything is read from stdin.
func TestEveryCommandsUsageErrors(t *testing.T) {
	opt := testOptions(t)
	walk(root, root.name, func(cmd *command, path string) {
		if cmd == root || cmd.hidden {
			return
		}
		base := strings.Fields(path)[1:]
		args := append(append([]string{}, base...), "--no-such-flag")
		code, out, errs := runNoStdin(t, opt, args...)
		oneUsageLine(t, args, code, out, errs)
		if cmd.run == nil && cmd.flags == nil { // a group without its sub-command
			code, out, errs := runNoStdin(t, opt, base...)
			oneUsageLine(t, base, code, out, errs)
			return
		}
		if cmd.minArgs > 0 {
			code, out, errs := runNoStdin(t, opt, base...)
			oneUsageLine(t, base, code, out, errs)
		}
		if cmd.maxArgs >= 0 {
			args := append(append([]string{}, base...), "a", "b", "c", "d")
			code, out, errs := runNoStdin(t, opt, args...)
			oneUsageLine(t, args, code, out, errs)
		}
	})
}

// The mistakes the issue found, each a usage error (exit 2) told before stdin is read.
func TestValuesTheCommandsRefuseAreUsageErrors(t *testing.T) {
	opt := testOptions(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"accounts", "add", "--name", "x", "--kind", "openai"}, "--base-url is required"},
		{[]string{"accounts", "add", "--name", "x", "--kind", "openai", "--base-url", "not a url"}, "--base-url: base URL"},
		{[]string{"accounts", "add", "--name", "x y", "--kind", "openai", "--base-url", "https://x.test"}, "--name: account name"},
		{[]string{"accounts", "add", "--name", "x", "--kind", "azure"}, `unknown --kind "azure"`},
		{[]string{"accounts", "move", "x", "--to", "-3"}, "--to -3: positions start at 1"},
		{[]string{"accounts", "set-reserve", "x", "100"}, "PERCENT 100 is out of range: give 1 to 99 (percent of the account's binding window), or 0 for none"},
		{[]string{"accounts", "set-reserve", "x", "-5"}, "PERCENT -5 is out of range"},
		{[]string{"accounts", "set-reserve", "x", "a lot"}, `PERCENT "a lot" is not a whole number`},
		{[]string{"settings", "set", "strategy", "fastest"}, `strategy must be priority, round-robin, most-quota-left or reset-first, not "fastest"`},
		{[]string{"settings", "set", "strategy", "round-robn"}, `(did you mean "round-robin"?)`},
		{[]string{"settings", "set", "ttl-ms", "-5"}, "ttl-ms must be a positive number of milliseconds"},
		{[]string{"settings", "set", "hold-seconds", "4000"}, "hold-seconds must be a number of seconds from -1 (never) to 3600"},
		{[]string{"settings", "set", "listen", "nonsense"}, `codexrelay: listen must be host:port, e.g. 127.0.0.1:7455, not "nonsense"`},
		{[]string{"settings", "set", "listen", "127.0.0.1:1455"}, "codexrelay: listen cannot use port 1455"},
		{[]string{"settings", "set", "usage-ledger", "maybe"}, "usage-ledger takes true or false"},
		{[]string{"settings", "set", "header-timeout-ms", "500"}, "header-timeout-ms must be 0 (the default) or a number of milliseconds of at least 1000"},
		{[]string{"settings", "set", "colour", "blue"}, `unknown setting "colour": the keys are listen, strategy`},
		{[]string{"usage", "--by", "weekday"}, `--by "weekday": group by one of`},
	} {
		code, out, errs := runNoStdin(t, opt, c.args...)
		oneUsageLine(t, c.args, code, out, errs)
		if !strings.Contains(errs, c.want) {
			t.Errorf("%v: stderr %q, want %q", c.args, errs, c.want)
		}
	}
	// Nothing was saved by any of them.
	if _, err := os.Stat(filepath.Join(opt.ConfigDir, "settings.json")); err == nil {
		b, _ := os.ReadFile(filepath.Join(opt.ConfigDir, "settings.json"))
		var s app.Settings
		json.Unmarshal(b, &s)
		if s.Generation != 0 {
			t.Errorf("a refused command changed the settings: %s", b)
		}
	}
}

// validValues gives each setting of the table a value it takes and how `settings` then shows
// it. A row without one here fails the test: a new setting is tested when it is added.
var validValues = map[app.SettingName][2]string{
	app.SettingStrategy:           {"round-robin", "round-robin"},
	app.SettingSWR:                {"false", "false"},
	app.SettingStaleMaxAge:        {"900000", "900000"},
	app.SettingTTL:                {"120000", "120000"},
	app.SettingHeaderTimeout:      {"5000", "5000"},
	app.SettingFirstEventTimeout:  {"0", strconv.FormatInt(proxy.DefaultFirstEventTimeout.Milliseconds(), 10)}, // 0: the default, shown as its value
	app.SettingStreamIdleTimeout:  {"7000", "7000"},
	app.SettingHold:               {"-1", "-1"},
	app.SettingResetCredits:       {"auto", "auto"},
	app.SettingUsageLedger:        {"false", "false"},
	app.SettingUsageRetentionDays: {"30", "30"},
	app.SettingLowCapacity:        {"35", "35"},
	app.SettingStartAtLogin:       {"true", "true"},
	app.SettingUpdateCheck:        {"true", "true"},
	app.SettingUpdateFeed:         {"http://127.0.0.1:9/releases/latest", "http://127.0.0.1:9/releases/latest"},
}

func init() {
	for _, kind := range app.NotifyKinds {
		validValues[app.NotifySetting(kind)] = [2]string{"false", "false"}
	}
}

// Every setting parses, saves and shows through the one table: `settings set` then `settings`
// shows the value as it was given, and the help lists every key with its text.
func TestEverySettingFromTheOneTable(t *testing.T) {
	opt := testOptions(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := ln.Addr().String()
	ln.Close()
	values := map[app.SettingName][2]string{app.SettingListen: {free, free}}
	for k, v := range validValues {
		values[k] = v
	}
	_, help, _ := runCLI(t, opt, "", "settings", "set", "-h")
	for _, st := range app.SettingsTable {
		if !strings.Contains(help, "  "+string(st.Name)+" ") || !strings.Contains(help, st.Help[:min(len(st.Help), 40)]) {
			t.Errorf("the help lacks %s:\n%s", st.Name, help)
		}
		if st.Label == "" || st.Section == "" || st.Show == nil || (st.Kind == app.SettingChoice) != (len(st.Choices) > 0) {
			t.Errorf("%s: a row needs a label, a section, a show, and choices when it is a choice", st.Name)
		}
		if st.Name == app.SettingLocalAPIKey {
			continue // needs the keychain: app's TestLocalKey
		}
		v, ok := values[st.Name]
		if !ok {
			t.Errorf("%s: no test value: add one to validValues", st.Name)
			continue
		}
		if code, out, errs := runCLI(t, opt, "", "settings", "set", string(st.Name), v[0]); code != 0 || !strings.HasPrefix(out, "Set "+string(st.Name)+" to "+v[0]+".\n") {
			t.Errorf("set %s %s: exit %d, %q %q", st.Name, v[0], code, out, errs)
		}
		_, out, _ := runCLI(t, opt, "", "settings")
		if !lineWith(out, string(st.Name), v[1]) {
			t.Errorf("settings shows no %q for %s:\n%s", v[1], st.Name, out)
		}
		if _, err := st.Parse("\x00bad"); err == nil {
			t.Errorf("%s takes any text", st.Name)
		} else if fe, ok := err.(*app.FieldError); !ok || !strings.Contains(err.Error(), string(st.Name)) && fe.Field != string(st.Name) {
			t.Errorf("%s: %T %v does not name the setting", st.Name, err, err)
		}
	}
	for _, tm := range app.Timeouts {
		if _, ok := app.LookupSetting(string(tm.Setting())); !ok {
			t.Errorf("timeout %s has no setting %s", tm, tm.Setting())
		}
	}
}

// lineWith says whether out has a line "name<spaces>value".
func lineWith(out, name, value string) bool {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == name && f[1] == value {
			return true
		}
	}
	return false
}

// settings set listen to a port another program holds fails (exit 1) and saves nothing: the
// next start would fail on it.
func TestSettingsSetListenRefusesATakenPort(t *testing.T) {
	opt := testOptions(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	code, out, errs := runCLI(t, opt, "", "settings", "set", "listen", addr)
	if code != 1 || out != "" || !strings.Contains(errs, "cannot listen on "+addr+": the port is taken") || !strings.Contains(errs, "; listen was not changed") {
		t.Fatalf("exit %d, %q %q", code, out, errs)
	}
	a, err := app.Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.ListenAddr(); got != app.DefaultListen {
		t.Fatalf("saved %s", got)
	}
}

// settings set listen takes neither every interface (":80") nor a port below 1024 (which only
// root may open): a usage error, and nothing is saved for Codex's config to name.
func TestSettingsSetListenRefusesWhatNoRelayCouldServe(t *testing.T) {
	opt := testOptions(t)
	for addr, want := range map[string]string{
		":80":            "must be a loopback address",
		"127.0.0.1:80":   "ports below 1024 need root",
		"[::1]:0443":     "ports below 1024 need root",
		"localhost:1023": "ports below 1024 need root",
	} {
		if code, _, errs := runCLI(t, opt, "", "settings", "set", "listen", addr); code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d, %q", addr, code, errs)
		}
	}
	if a, err := app.Open(opt); err != nil || a.ListenAddr() != app.DefaultListen {
		t.Fatalf("saved: %v", err)
	}
}

// After a move, Codex points at the new port: the configuration Codex Relay wrote is rewritten
// (with a backup); without one, the command says how to point Codex there.
func TestSettingsSetListenPointsCodexAtTheNewPort(t *testing.T) {
	opt := testOptions(t)
	codexHome := t.TempDir()
	opt.Getenv = func(k string) string {
		if k == "CODEX_HOME" {
			return codexHome
		}
		return ""
	}
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	first := free()
	code, out, _ := runCLI(t, opt, "", "settings", "set", "listen", first)
	if code != 0 || !strings.Contains(out, "`codexrelay codex-config --write` points it at the relay with the new address") {
		t.Fatalf("without a Codex configuration: %d %q", code, out)
	}
	if code, _, errs := runCLI(t, opt, "", "codex-config", "--write"); code != 0 {
		t.Fatal(errs)
	}
	second := free()
	code, out, errs := runCLI(t, opt, "", "settings", "set", "listen", second)
	if code != 0 || !strings.Contains(out, "Codex now points at "+second) {
		t.Fatalf("move: %d %q %q", code, out, errs)
	}
	b, _ := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	if !strings.Contains(string(b), "http://"+second+"/v1") || strings.Contains(string(b), first) {
		t.Fatalf("config.toml:\n%s", b)
	}
}

// `version --check` makes no network call with the update check off (the default).
func TestVersionCheckOffByDefault(t *testing.T) {
	var out, errb strings.Builder
	c := &CLI{Options: app.Options{ConfigDir: t.TempDir(), Getenv: func(string) string { return "" }}, Stdout: &out, Stderr: &errb}
	if code := c.Run([]string{"version", "--check"}); code != 0 || !strings.Contains(out.String(), "the update check is off") {
		t.Fatalf("exit %d: %q %q", code, out.String(), errb.String())
	}
}
