package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain lets tests run the CLI in processes of their own: the test binary, started with
// CODEXRELAY_TEST_CLI=1, is `codexrelay` on a test settings folder and keychain service.
func TestMain(m *testing.M) {
	if os.Getenv("CODEXRELAY_TEST_CLI") == "1" {
		c := &testCLI{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Options: Options{
			ConfigDir: os.Getenv("CODEXRELAY_TEST_CONFIG"),
			Keychain:  Keychain{Service: os.Getenv("CODEXRELAY_TEST_SERVICE")},
			Getenv:    func(string) string { return "" },
		}}
		os.Exit(c.Run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// cliProcess prepares `codexrelay args...` as a process of its own on opt's folder and keychain.
func cliProcess(opt Options, stdin string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "CODEXRELAY_TEST_CLI=1", "CODEXRELAY_TEST_CONFIG="+opt.ConfigDir,
		"CODEXRELAY_TEST_SERVICE="+opt.Keychain.Service)
	cmd.Stdin = strings.NewReader(stdin)
	return cmd
}

// fileAccounts reads the account names in the settings file.
func fileAccounts(t *testing.T, dir string) []string {
	t.Helper()
	s, err := readSettings(filepath.Join(dir, settingsName))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range s.Accounts {
		names = append(names, m.Name)
	}
	sort.Strings(names)
	return names
}

// keychainMatchesFile checks that the keychain holds exactly the entries the file names.
func keychainMatchesFile(t *testing.T, opt Options) {
	t.Helper()
	s, _ := readSettings(filepath.Join(opt.ConfigDir, settingsName))
	var want []string
	for _, m := range s.Accounts {
		want = append(want, accountUser(m.ID))
	}
	if s.LocalAPIKey {
		want = append(want, localKeyUser(s.LocalKeyID))
	}
	got, err := opt.Keychain.List()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("keychain entries %v, the file names %v", got, want)
	}
}

func cleanKeychain(t *testing.T, k Keychain) {
	t.Cleanup(func() {
		users, _ := k.List()
		for _, u := range users {
			k.Delete(u)
		}
	})
}

func TestParallelAddsFromManyProcessesKeepEveryAccount(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	opt := testOptions(t, k)
	up := newFakeUpstream(t)
	const n = 20
	var wg sync.WaitGroup
	outs := make([]string, n)
	codes := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := cliProcess(opt, fmt.Sprintf("sk-key-%d\n", i), "accounts", "add", "--name", fmt.Sprintf("acct-%02d", i),
				"--kind", "openai", "--base-url", up.URL+"/v1")
			out, err := cmd.CombinedOutput()
			outs[i] = string(out)
			if err != nil {
				codes[i] = cmd.ProcessState.ExitCode()
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if codes[i] != 0 || !strings.Contains(outs[i], "Added account") {
			t.Fatalf("process %d: exit %d\n%s", i, codes[i], outs[i])
		}
	}
	if got := fileAccounts(t, opt.ConfigDir); len(got) != n {
		t.Fatalf("%d accounts in the file after %d adds: %v", len(got), n, got)
	}
	keychainMatchesFile(t, opt)
	s, _ := readSettings(filepath.Join(opt.ConfigDir, settingsName))
	if s.Generation != n {
		t.Fatalf("generation %d after %d changes", s.Generation, n)
	}
}

func TestParallelAddsAndRemovesEndAsTheirCommandsSaid(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	opt := testOptions(t, k)
	up := newFakeUpstream(t)
	for i := range 6 {
		if code, out, errs := runCLI(t, opt, "sk-x\n", "accounts", "add", "--name", fmt.Sprintf("old-%d", i), "--kind", "openai", "--base-url", up.URL); code != 0 {
			t.Fatal(out, errs)
		}
	}
	type job struct {
		args  []string
		stdin string
	}
	var jobs []job
	for i := range 8 {
		jobs = append(jobs, job{[]string{"accounts", "add", "--name", fmt.Sprintf("new-%d", i), "--kind", "openai", "--base-url", up.URL}, "sk-y\n"})
	}
	for i := range 6 {
		jobs = append(jobs, job{[]string{"accounts", "remove", fmt.Sprintf("old-%d", i)}, ""})
	}
	// Two removes of the same account: exactly one may succeed.
	jobs = append(jobs, job{[]string{"accounts", "remove", "old-0"}, ""})
	// An add whose name an earlier add takes: exactly one of the two succeeds.
	jobs = append(jobs, job{[]string{"accounts", "add", "--name", "new-0", "--kind", "openai", "--base-url", up.URL}, "sk-z\n"})
	var wg sync.WaitGroup
	ok := make([]bool, len(jobs))
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok[i] = cliProcess(opt, j.stdin, j.args...).Run() == nil
		}()
	}
	wg.Wait()
	want := map[string]bool{}
	for i := range 6 {
		want[fmt.Sprintf("old-%d", i)] = true
	}
	for i, j := range jobs {
		if !ok[i] {
			continue
		}
		name := j.args[len(j.args)-1]
		if j.args[1] == "add" {
			name = j.args[3]
			want[name] = true
		} else {
			delete(want, name)
		}
	}
	var wantNames []string
	for n := range want {
		wantNames = append(wantNames, n)
	}
	sort.Strings(wantNames)
	if got := fileAccounts(t, opt.ConfigDir); !slices.Equal(got, wantNames) {
		t.Fatalf("file has %v; the successful commands said %v", got, wantNames)
	}
	// Jobs 8 and 14 both remove old-0, jobs 0 and 15 both add new-0: one of each pair at most.
	if ok[8] && ok[14] {
		t.Fatal("old-0 was removed twice")
	}
	if ok[0] && ok[15] {
		t.Fatal("new-0 was added twice")
	}
	keychainMatchesFile(t, opt)
}

// runningRelay is a relay as the tray runs it: the instance claimed, the listener started and
// the settings file followed.
func runningRelay(t *testing.T, opt Options) (*Relay, *Service) {
	t.Helper()
	inst, other, err := ClaimInstance(opt.ConfigDir, "tray")
	if err != nil || other != nil {
		t.Fatalf("claim: %v %v", other, err)
	}
	t.Cleanup(inst.Release)
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.update(func(s *Settings) error { s.Listen = "127.0.0.1:0"; return nil }); err != nil {
		t.Fatal(err)
	}
	svc := a.NewService()
	svc.Instance = inst
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go a.Watch(ctx)
	t.Cleanup(func() { cancel(); svc.Stop() })
	return a, svc
}

// send posts a small Responses request to the relay with the bearer key (none when "").
func send(t *testing.T, addr, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/responses", strings.NewReader(`{"model":"gpt-5","input":"hi"}`))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (f *fakeUpstream) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.reqs {
		if r.Method == http.MethodPost {
			n++
		}
	}
	return n
}

func TestARunningRelayFollowsTheCLI(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	opt := testOptions(t, k)
	_, svc := runningRelay(t, opt)
	addr := svc.Status().Addr
	if code, _ := send(t, addr, ""); code != http.StatusServiceUnavailable {
		t.Fatalf("no account yet: %d", code)
	}
	one, two := newFakeUpstream(t), newFakeUpstream(t)
	for _, c := range []struct{ name, url string }{{"one", one.URL}, {"two", two.URL}} {
		code, out, errs := runCLI(t, opt, "sk-"+c.name+"\n", "accounts", "add", "--name", c.name, "--kind", "openai", "--base-url", c.url)
		if code != 0 || !strings.Contains(out, "The running Codex Relay (the tray app") || !strings.Contains(out, "applied it in") {
			t.Fatalf("add %s: %d %q %q", c.name, code, out, errs)
		}
	}
	// The CLI said the relay applied it: the very next request uses the account.
	if code, body := send(t, addr, ""); code != 200 || one.count() != 1 {
		t.Fatalf("after the adds: %d %s (one took %d)", code, body, one.count())
	}
	// Removed: never chosen again.
	if code, out, _ := runCLI(t, opt, "", "accounts", "remove", "one"); code != 0 || !strings.Contains(out, `Removed account "one" and its keychain entry.`) {
		t.Fatalf("remove: %q", out)
	}
	for range 3 {
		if code, _ := send(t, addr, ""); code != 200 {
			t.Fatal(code)
		}
	}
	if one.count() != 1 || two.count() != 3 {
		t.Fatalf("after the remove: one took %d, two %d", one.count(), two.count())
	}
	// Disabled: not chosen; every account disabled: no usable account.
	if code, out, _ := runCLI(t, opt, "", "accounts", "disable", "two"); code != 0 || !strings.Contains(out, `Disabled account "two"`) {
		t.Fatalf("disable: %q", out)
	}
	if code, _ := send(t, addr, ""); code != http.StatusServiceUnavailable || two.count() != 3 {
		t.Fatalf("a disabled account was used: %d, %d", code, two.count())
	}
	runCLI(t, opt, "", "accounts", "enable", "two")
	// Renamed: the relay reports the new name and keeps the account's counters.
	if code, out, _ := runCLI(t, opt, "", "accounts", "rename", "two", "deux"); code != 0 || !strings.Contains(out, `Renamed account "two" to "deux".`) {
		t.Fatalf("rename: %q", out)
	}
	st := svc.r.Proxy.Stats().Accounts
	if len(st) != 1 || st[0].Name != "deux" || st[0].Requests != 3 {
		t.Fatalf("after the rename: %+v", st)
	}

	// The local key: on is enforced at once, off lets clients in again.
	code, out, _ := runCLI(t, opt, "", "local-key", "on")
	if code != 0 || !strings.Contains(out, "applied it in") {
		t.Fatalf("local-key on: %q", out)
	}
	key := strings.Fields(strings.SplitN(out, "\n", 3)[1])[0]
	if code, _ := send(t, addr, ""); code != http.StatusUnauthorized {
		t.Fatalf("without the key after local-key on: %d", code)
	}
	if code, _ := send(t, addr, key); code != 200 {
		t.Fatalf("with the key: %d", code)
	}
	// A new key replaces the old one in the running relay.
	_, out, _ = runCLI(t, opt, "", "local-key", "on")
	key2 := strings.Fields(strings.SplitN(out, "\n", 3)[1])[0]
	if c1, _ := send(t, addr, key); c1 != http.StatusUnauthorized || key2 == key {
		t.Fatalf("the old key still works: %d", c1)
	}
	if c2, _ := send(t, addr, key2); c2 != 200 {
		t.Fatalf("the new key: %d", c2)
	}
	if code, out, _ := runCLI(t, opt, "", "local-key", "off"); code != 0 || !strings.Contains(out, "applied it in") {
		t.Fatalf("local-key off: %q", out)
	}
	if code, _ := send(t, addr, ""); code != 200 {
		t.Fatalf("without a key after local-key off: %d", code)
	}

	// Settings and aliases too.
	runCLI(t, opt, "", "settings", "set", "strategy", "round-robin")
	runCLI(t, opt, "", "settings", "set", "ttl-ms", "120000")
	runCLI(t, opt, "", "aliases", "set", "fast", "gpt-5-mini")
	cur := svc.r.Settings()
	if cur.Strategy != "round-robin" || svc.r.Proxy.Stats().Catalog.TTLMs != 120000 || cur.Aliases["fast"][0] != "gpt-5-mini" {
		t.Fatalf("settings not followed: %+v", cur)
	}
}

func TestARunningRelayMovesToANewListenAddress(t *testing.T) {
	opt := testOptions(t, Keychain{})
	_, svc := runningRelay(t, opt)
	old := svc.Status().Addr
	ln, _ := (&App{}).Listen("127.0.0.1:0")
	next := ln.Addr().String()
	ln.Close()
	code, out, errs := runCLI(t, opt, "", "settings", "set", "listen", next)
	if code != 0 || !strings.Contains(out, "relay on "+next) || !strings.Contains(out, "applied it in") {
		t.Fatalf("set listen: %d %q %q", code, out, errs)
	}
	if st := svc.Status(); st.Addr != next || !st.Running {
		t.Fatalf("status %+v", st)
	}
	if resp, err := http.Get("http://" + next + "/health"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	// The old port is let go.
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + old + "/health")
		if err != nil {
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("the old address still answers")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestAPinnedAddressSaysARestartIsNeeded(t *testing.T) {
	opt := testOptions(t, Keychain{})
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	ln, _ := a.Listen("127.0.0.1:0")
	pinned := ln.Addr().String()
	ln.Close()
	svc := a.NewServeService(pinned, false)
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	if err := a.Set(SettingListen, "127.0.0.1:7499"); err != nil {
		t.Fatal(err)
	}
	if st := svc.Status(); st.Addr != pinned || !strings.Contains(st.Warning, "--listen "+pinned) || !strings.Contains(st.Warning, "restart") {
		t.Fatalf("status %+v", st)
	}
}

func TestTrayChangesKeepAccountsTheCLIAdded(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	opt := testOptions(t, k)
	tray, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	up := newFakeUpstream(t)
	// Another process adds an account while the tray runs (its watcher is not even started).
	if err := cliProcess(opt, "sk-cli\n", "accounts", "add", "--name", "from-cli", "--kind", "openai", "--base-url", up.URL).Run(); err != nil {
		t.Fatal(err)
	}
	if err := tray.Set(SettingSWR, "false"); err != nil {
		t.Fatal(err)
	}
	if got := fileAccounts(t, opt.ConfigDir); !slices.Equal(got, []string{"from-cli"}) {
		t.Fatalf("after the tray's toggle the file has %v", got)
	}
	// The tray's change read the file again, so the tray serves the CLI's account too.
	if st := tray.Proxy.Stats().Accounts; len(st) != 1 || st[0].Name != "from-cli" {
		t.Fatalf("tray proxy accounts %+v", st)
	}
	keychainMatchesFile(t, opt)
}

func TestSecondInstanceExitsWithoutWriting(t *testing.T) {
	opt := testOptions(t, Keychain{})
	_, svc := runningRelay(t, opt)
	before := snapshotDir(t, opt.ConfigDir)
	inst, other, err := ClaimInstance(opt.ConfigDir, "tray")
	if err != nil || inst != nil || other == nil {
		t.Fatalf("second claim: %v %v %v", inst, other, err)
	}
	if other.Mode != "tray" || other.PID != os.Getpid() || other.Listen != svc.Status().Addr {
		t.Fatalf("the second launch sees %+v", other)
	}
	if after := snapshotDir(t, opt.ConfigDir); after != before {
		t.Fatalf("the second launch touched files:\n%s\n---\n%s", before, after)
	}
	// `serve` says a relay runs and exits non-zero.
	code, out, errs := runCLI(t, opt, "", "serve")
	if code != 1 || !strings.Contains(errs, "another Codex Relay is already running (the tray app, pid") || out != "" {
		t.Fatalf("serve beside the tray: %d %q %q", code, out, errs)
	}
	if after := snapshotDir(t, opt.ConfigDir); after != before {
		t.Fatalf("serve touched files:\n%s\n---\n%s", before, after)
	}
}

func TestSecondLaunchBringsTheDashboardToTheFront(t *testing.T) {
	dir := t.TempDir()
	inst, _, err := ClaimInstance(dir, "tray")
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Release()
	shown := make(chan struct{}, 1)
	if err := inst.OnShow(func() { shown <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	_, other, _ := ClaimInstance(dir, "tray")
	if other == nil {
		t.Fatal("no running instance found")
	}
	if err := other.Show(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-shown:
	case <-time.After(5 * time.Second):
		t.Fatal("the dashboard was not asked to show")
	}
	// The control port wants the token from the private instance file.
	bad := *other
	bad.Token = "guess"
	if err := bad.Show(); err == nil {
		t.Fatal("a wrong token was accepted")
	}
	// After the first instance ends, a new launch claims the folder.
	inst.Release()
	again, other2, err := ClaimInstance(dir, "serve")
	if err != nil || again == nil || other2 != nil {
		t.Fatalf("claim after release: %v %v", other2, err)
	}
	again.Release()
}

// snapshotDir describes every file in dir (name, size, time, mode) to tell whether any changed.
func snapshotDir(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil {
			fmt.Fprintf(&b, "%s %d %d %v\n", p, info.Size(), info.ModTime().UnixNano(), info.Mode())
		}
		return nil
	})
	return b.String()
}

func TestSymlinkedFilesKeepTheirLink(t *testing.T) {
	opt := newInstallOptions(t, Keychain{})
	real := filepath.Join(t.TempDir(), "dotfiles")
	os.MkdirAll(real, 0o700)
	os.WriteFile(filepath.Join(real, "settings.json"), []byte(`{"strategy":"priority","accounts":[]}`), 0o600)
	link := filepath.Join(opt.ConfigDir, "settings.json")
	rel, _ := filepath.Rel(opt.ConfigDir, filepath.Join(real, "settings.json"))
	if err := os.Symlink(rel, link); err != nil { // a relative link, as dotfile managers make them
		t.Fatal(err)
	}
	a, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Set(SettingStrategy, "round-robin"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("settings.json is no longer a link: %v", err)
	}
	if s, _ := readSettings(filepath.Join(real, "settings.json")); s.Strategy != "round-robin" {
		t.Fatalf("the link's target was not written: %+v", s)
	}

	// config.toml through a link: written through, backed up beside the link.
	codex := t.TempDir()
	target := filepath.Join(t.TempDir(), "codex-config.toml")
	os.WriteFile(target, []byte("model = \"gpt-5\"\n"), 0o600)
	cfg := filepath.Join(codex, "config.toml")
	os.Symlink(target, cfg)
	res, err := a.WriteCodexConfig(cfg)
	if err != nil || res.Change != ConfigUpdated {
		t.Fatal(res, err)
	}
	if st, _ := os.Lstat(cfg); st.Mode()&os.ModeSymlink == 0 {
		t.Fatal("config.toml is no longer a link")
	}
	if b, _ := os.ReadFile(target); !strings.Contains(string(b), "codexrelay") || !strings.Contains(string(b), `model = "gpt-5"`) {
		t.Fatalf("target:\n%s", b)
	}
	if b, _ := os.ReadFile(res.Backup); string(b) != "model = \"gpt-5\"\n" {
		t.Fatalf("backup %s: %q", res.Backup, b)
	}
}

func TestBackupsNeverCollide(t *testing.T) {
	opt := testOptions(t, Keychain{})
	fixed := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	opt.Now = func() time.Time { return fixed } // every write in the same second
	a, _ := OpenRelay(opt)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	var backups []string
	for i := range 3 {
		content := fmt.Sprintf("model = \"m-%d\"\n", i)
		os.WriteFile(cfg, []byte(content), 0o600)
		res, err := a.WriteCodexConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(res.Backup); string(b) != content {
			t.Fatalf("backup %d holds %q", i, b)
		}
		backups = append(backups, res.Backup)
	}
	want := cfg + ".bak-20261201T090000Z"
	if !slices.Equal(backups, []string{want, want + "-2", want + "-3"}) {
		t.Fatalf("backups %v", backups)
	}
	// Each backup may hold an older bearer token: only the newest three are kept. A file that
	// only looks like one (another name, a folder) is left alone.
	os.WriteFile(cfg+".bak-notes", []byte("mine"), 0o600)
	os.Mkdir(cfg+".bak-20200101T000000Z", 0o700)
	for i := 3; i < 6; i++ {
		os.WriteFile(cfg, []byte(fmt.Sprintf("model = \"m-%d\"\n", i)), 0o600)
		if _, err := a.WriteCodexConfig(cfg); err != nil {
			t.Fatal(err)
		}
	}
	left, _ := filepath.Glob(cfg + ".bak-*")
	slices.Sort(left)
	var kept []string
	for _, b := range left[1:min(4, len(left))] {
		c, _ := os.ReadFile(b)
		kept = append(kept, strings.TrimSpace(string(c)))
	}
	slices.Sort(kept)
	if !slices.Equal(kept, []string{`model = "m-3"`, `model = "m-4"`, `model = "m-5"`}) {
		t.Fatalf("the backups kept hold %q, not the three newest", kept)
	}
	if len(left) != 5 || left[0] != cfg+".bak-20200101T000000Z" || left[4] != cfg+".bak-notes" {
		t.Fatalf("after six writes: %v", left)
	}
}

func TestOrphanKeychainEntriesAreReportedAndPruned(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	opt := testOptions(t, k)
	up := newFakeUpstream(t)
	runCLI(t, opt, "sk-kept\n", "accounts", "add", "--name", "kept", "--kind", "openai", "--base-url", up.URL)
	// What a crash between the keychain and the settings file leaves behind.
	mine := Keychain{Service: k.Service, Folder: folderKey(opt.ConfigDir)}
	mine.Set(accountUser("deadbeefdeadbeef"), Secret{APIKey: "sk-orphan"}.encode())
	k.Set(legacyLocalKeyUser, "crk-stale") // the local key is off; the entry names no folder
	code, out, _ := runCLI(t, opt, "", "accounts", "list")
	if code != 0 || !strings.Contains(out, "1 keychain entry of this settings folder belongs to no account") || !strings.Contains(out, "accounts prune") {
		t.Fatalf("list: %q", out)
	}
	code, out, _ = runCLI(t, opt, "", "accounts", "prune")
	if code != 0 || !strings.Contains(out, "Removing 1 keychain entry that no account names: account/deadbeefdeadbeef.\nRemoved 1 keychain entry.") ||
		!strings.Contains(out, "Left alone 1 keychain entry of unknown owner") || strings.Contains(out, "sk-") || strings.Contains(out, "crk-") {
		t.Fatalf("prune: %q", out)
	}
	if _, err := k.Get(legacyLocalKeyUser); err != nil {
		t.Fatal("an entry of unknown owner was removed without asking")
	}
	code, out, _ = runCLI(t, opt, "", "accounts", "prune", "--include-unknown")
	if code != 0 || !strings.Contains(out, "Removed 1 keychain entry") {
		t.Fatalf("prune --include-unknown: %q", out)
	}
	keychainMatchesFile(t, opt)
	code, out, _ = runCLI(t, opt, "", "accounts", "prune")
	if code != 0 || !strings.Contains(out, "nothing to remove") {
		t.Fatalf("second prune: %q", out)
	}
}

func TestAHandEditThatDoesNotParseKeepsTheLastGoodSettings(t *testing.T) {
	opt := testOptions(t, Keychain{})
	a, _ := runningRelay(t, opt)
	path := filepath.Join(opt.ConfigDir, settingsName)
	if err := a.Set(SettingStrategy, "round-robin"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte(`{"strategy": "priority", `), 0o600) // an editor's half-saved file
	waitFor(t, func() bool { return a.ReloadError() != nil })
	if a.Settings().Strategy != "round-robin" {
		t.Fatal("the last good settings were dropped")
	}
	// A change refuses to overwrite the user's broken file.
	if err := a.Set(SettingStrategy, "priority"); err == nil || !strings.Contains(err.Error(), "does not overwrite it") {
		t.Fatalf("a change over a broken file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"strategy": "priority", ` {
		t.Fatal("the broken file was overwritten")
	}
	os.WriteFile(path, []byte(`{"strategy": "priority", "accounts": []}`), 0o600) // fixed by hand
	waitFor(t, func() bool { return a.ReloadError() == nil && a.Settings().Strategy == "priority" })
}

// waitFor polls cond for up to five seconds (the watcher applies changes within milliseconds).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCLIMessagesSayWhatHappened(t *testing.T) {
	k := testKeychain(t)
	cleanKeychain(t, k)
	opt := testOptions(t, k)
	up := newFakeUpstream(t)
	for _, n := range []string{"a", "b", "c"} {
		runCLI(t, opt, "sk-1\n", "accounts", "add", "--name", n, "--kind", "openai", "--base-url", up.URL)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"accounts", "move", "c", "--to", "1"}, `Moved account "c" to position 1 of 3.`},
		{[]string{"accounts", "disable", "b"}, `Disabled account "b": it takes no request until you enable it.`},
		{[]string{"accounts", "enable", "b"}, `Enabled account "b": it takes requests again.`},
		{[]string{"accounts", "remove", "a"}, `Removed account "a" and its keychain entry.`},
		{[]string{"settings", "set", "strategy", "round-robin"}, "Set strategy to round-robin."},
	} {
		code, out, errs := runCLI(t, opt, "", c.args...)
		if code != 0 || !strings.HasPrefix(out, c.want+"\nNo Codex Relay is running: it will use this when it starts.\n") {
			t.Errorf("%v: %d %q %q", c.args, code, out, errs)
		}
	}
	// codex-config --write: created, unchanged, updated.
	cfg := filepath.Join(t.TempDir(), "config.toml")
	for _, want := range []string{"Created " + cfg, cfg + " already points Codex at the relay; nothing changed."} {
		if code, out, _ := runCLI(t, opt, "", "codex-config", "--write", "--path", cfg); code != 0 || !strings.HasPrefix(out, want) {
			t.Errorf("codex-config: %q, want %q", out, want)
		}
	}
	os.WriteFile(cfg, []byte("model = \"gpt-5\"\n"), 0o600)
	if code, out, _ := runCLI(t, opt, "", "codex-config", "--write", "--path", cfg); code != 0 || !strings.HasPrefix(out, "Updated "+cfg) || !strings.Contains(out, ".bak-") {
		t.Errorf("codex-config update: %q", out)
	}
}

// TestAnotherProcessesRefreshIsAdopted: two relays on one settings folder (the tray and a CLI
// reading quotas, say) share a ChatGPT sign-in whose refresh tokens are single-use. The second
// adopts the pair the first refreshed instead of spending the spent token.
func TestAnotherProcessesRefreshIsAdopted(t *testing.T) {
	iss := newFakeIssuer(t)
	backend := newCodexBackend(t, func(string) bool { return true })
	a, opt := oauthApp(t, iss, backend.URL)
	iss.accessLife = 2 * time.Minute // inside the refresh margin
	m, err := a.SignInChatGPT(context.Background(), "me", iss.browser(t))
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenRelay(opt)
	if err != nil {
		t.Fatal(err)
	}
	iss.accessLife = time.Hour
	// Both load the sign-in; the first refreshes it.
	if _, err := b.credsFor(m.ID).secret(); err != nil {
		t.Fatal(err)
	}
	c1, err := a.credsFor(m.ID).Credential(context.Background())
	if err != nil || iss.refreshes.Load() != 1 {
		t.Fatalf("first refresh: %v (%d refreshes)", err, iss.refreshes.Load())
	}
	c2, err := b.credsFor(m.ID).Credential(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c2.Token != c1.Token || iss.refreshes.Load() != 1 || iss.refused.Load() != 0 {
		t.Fatalf("the second process refreshed again (%d refreshes, %d refused)", iss.refreshes.Load(), iss.refused.Load())
	}
}
