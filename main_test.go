package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMain lets a test run this very binary as codexrelay: started with CODEXRELAY_TEST_MAIN=1
// the test binary is the program, every package initialised as in a build (Fyne's too).
func TestMain(m *testing.M) {
	if os.Getenv("CODEXRELAY_TEST_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// run runs `codexrelay args...` with env on a home of the test's own.
func run(t *testing.T, home string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append([]string{"CODEXRELAY_TEST_MAIN=1", "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local/share"), "CODEX_HOME=" + filepath.Join(home, ".codex"),
		"CODEXRELAY_LISTEN=127.0.0.1:1", "PATH=" + os.Getenv("PATH"), "DBUS_SESSION_BUS_ADDRESS=" + os.Getenv("DBUS_SESSION_BUS_ADDRESS")}, env...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), &out, &errb
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if code < 0 {
		t.Fatalf("%v: %v", args, err)
	}
	return code, out.String(), errb.String()
}

// commands lists every command path the usage shows ("accounts add"), from `codexrelay help`.
func commands(t *testing.T, home string) []string {
	_, usage, _ := run(t, home, nil, "help")
	seen := map[string]bool{}
	var paths []string
	for _, line := range strings.Split(usage, "\n") {
		rest, ok := strings.CutPrefix(line, "  codexrelay ")
		if !ok {
			continue
		}
		rest, _, _ = strings.Cut(rest, "  ") // the summary column
		var words []string
		for _, w := range strings.Fields(rest) {
			if w != strings.ToLower(w) || strings.ContainsAny(w, "[-|.") {
				break
			}
			words = append(words, w)
		}
		if p := strings.Join(words, " "); p != "" && !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	if len(paths) < 20 {
		t.Fatalf("only %d commands in the usage:\n%s", len(paths), usage)
	}
	return paths
}

// Under the C locale of containers, CI, cron and service managers, no command says anything on
// stderr it did not mean to: Fyne's locale lookup, which runs before main, stays quiet.
func TestNoLibraryChatterInAnyLocale(t *testing.T) {
	home := t.TempDir()
	paths := commands(t, home)
	for i, env := range [][]string{{"LANG=C.UTF-8"}, {"LANG="}, {"LC_ALL=C"}, {"LANG=C.utf8", "LANGUAGE=C"}} {
		if i > 0 {
			paths = paths[:1] // every command's help once is enough: the locale is read before main
		}
		for _, p := range paths {
			args := append(strings.Fields(p), "-h")
			code, out, errs := run(t, home, env, args...)
			if code != 0 || errs != "" || out == "" {
				t.Errorf("%v %v: exit %d, stderr %q", env, args, code, errs)
			}
		}
		// Commands that run, on an empty settings folder: what they say on stderr is theirs.
		runs := [][]string{{"version"}, {"settings"}, {"usage"}, {"settings", "set", "strategy", "fastest"}, {"aliases", "list"}, {"codex-config"}}
		if i > 0 {
			runs = runs[:4]
		}
		for _, args := range runs {
			_, _, errs := run(t, home, env, args...)
			for _, line := range strings.Split(strings.TrimSuffix(errs, "\n"), "\n") {
				if line != "" && !strings.HasPrefix(line, "codexrelay: ") {
					t.Errorf("%v %v: stderr %q", env, args, errs)
				}
			}
		}
	}
}

// `codexrelay window -h` says what the window process is; it opens no window (it used to
// open the dashboard of a running tray app).
func TestWindowHelpOpensNoWindow(t *testing.T) {
	home := t.TempDir()
	code, out, errs := run(t, home, nil, "window", "-h")
	if code != 0 || !strings.Contains(out, "window process") || errs != "" {
		t.Fatalf("window -h: %d %q %q", code, out, errs)
	}
	if code, _, errs := run(t, home, nil, "window"); code != 2 || !strings.Contains(errs, "tray app starts it") {
		t.Fatalf("window: %d %q", code, errs)
	}
}

// docs/development.md's layout names every package of app/, proxy/ and ui/ (proxy/internal's as
// one), and every package it names is one.
func TestTheLayoutNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("docs/development.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "```\n")
	end := strings.Index(doc[start+4:], "```")
	if start < 0 || end < 0 {
		t.Fatal("docs/development.md has no layout block")
	}
	layout := " " + strings.Join(strings.Fields(doc[start+4:start+4+end]), " ") + " "
	pkgs := map[string]bool{}
	for _, top := range []string{"app", "proxy", "ui"} {
		filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if gos, _ := filepath.Glob(filepath.Join(path, "*.go")); len(gos) > 0 && strings.Count(path, "/") > 0 {
				if strings.HasPrefix(path, "proxy/internal/") {
					path = "proxy/internal"
				}
				pkgs[path] = true
			}
			return nil
		})
	}
	for p := range pkgs {
		if !strings.Contains(layout, " "+p+" ") {
			t.Errorf("docs/development.md's layout does not say what %s is", p)
		}
	}
	for _, f := range regexp.MustCompile(`\b(?:app|proxy|ui)/[a-z]+(?:/[a-z]+)?(?:\.[a-z]+)?`).FindAllString(layout, -1) {
		if strings.Contains(f, ".") {
			continue // a file
		}
		if _, err := os.Stat(f); err != nil || !pkgs[f] && !strings.HasPrefix(f, "proxy/internal") {
			t.Errorf("docs/development.md's layout names %s: there is no such package", f)
		}
	}
}
