package tray

import (
	bufio "bufio"
	fmt "fmt"
	io "io"
	"log/slog"
	os "os"
	"os/exec"
	strings "strings"
	"sync/atomic"
	testing "testing"
	time "time"
)

// TestHelperWindowProcess is a stand-in window process for the launcher's tests (run as a
// child of the test binary): it speaks the pipe protocol, showing each window at once, and
// ends after the window named "last".
func TestHelperWindowProcess(t *testing.T) {
	if os.Getenv("CODEXRELAY_HELPER_WINDOW") == "" {
		t.Skip("a child process of the launcher's tests")
	}
	r := bufio.NewReader(os.Stdin)
	line, _ := r.ReadString('\n')
	if !strings.HasPrefix(line, "api http://") {
		os.Exit(3)
	}
	name := os.Getenv("CODEXRELAY_HELPER_WINDOW")
	if name == "stubborn" { // shows its window, then stays when the tray leaves
		fmt.Printf("shown %s\n", name)
		io.Copy(io.Discard, r)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	for {
		if name == "die" { // ends before showing its window
			os.Exit(0)
		}
		fmt.Printf("shown %s\n", name)
		if name == "last" {
			os.Exit(0)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			os.Exit(0) // the tray left
		}
		name = strings.TrimPrefix(strings.TrimSpace(line), "open ")
	}
}

func helperLauncher(t *testing.T) (*windowLauncher, *atomic.Int32) {
	t.Helper()
	var starts atomic.Int32
	l := &windowLauncher{
		command: func(name string) *exec.Cmd {
			starts.Add(1)
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWindowProcess$")
			cmd.Env = append(os.Environ(), "CODEXRELAY_HELPER_WINDOW="+name)
			cmd.Stderr = io.Discard
			return cmd
		},
		base: "http://127.0.0.1:1", token: "t", log: slog.New(slog.DiscardHandler), patience: 20 * time.Second,
	}
	t.Cleanup(l.Close)
	return l, &starts
}

// One window process at a time: later windows go to the running one; after it ended, the
// next window starts another; one that ends before showing its window is replaced.
func TestWindowLauncherOneProcessAtATime(t *testing.T) {
	l, starts := helperLauncher(t)
	for _, name := range []string{"dashboard", "settings", "usage"} {
		if err := l.open(name); err != nil {
			t.Fatal(err)
		}
	}
	if starts.Load() != 1 {
		t.Fatalf("%d window processes for three windows", starts.Load())
	}
	if err := l.open("last"); err != nil { // it ends after this one
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for l.running() {
		if time.Now().After(deadline) {
			t.Fatal("the ended window process is still counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.open("accounts"); err != nil || starts.Load() != 2 {
		t.Fatalf("after it ended: %v, %d starts", err, starts.Load())
	}
	l.Close()
	if l.running() {
		t.Error("Close left the window process running")
	}
	if err := l.open("dashboard"); err != errLauncherClosed {
		t.Errorf("after Close: %v", err)
	}

	l2, starts2 := helperLauncher(t)
	if err := l2.open("die"); err == nil || starts2.Load() != 2 {
		t.Errorf("a process that died twice before showing: %v after %d starts", err, starts2.Load())
	}
}

// Quit does not wait on a window process that stays after the tray left: Close ends it.
func TestWindowLauncherCloseEndsAWindowProcessThatStays(t *testing.T) {
	l, _ := helperLauncher(t)
	if err := l.open("stubborn"); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	p := l.cur
	l.mu.Unlock()
	l.Close()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the window process outlived Close")
	}
	if p.cmd.ProcessState == nil || p.cmd.ProcessState.Success() {
		t.Fatalf("the window process was not ended: %v", p.cmd.ProcessState)
	}
}
