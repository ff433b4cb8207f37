package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the program's side (a terminal, as a user's shell gives it)
// and the side that types into it and sees what it echoes.
func openPTY(t *testing.T) (tty, typist *os.File) {
	t.Helper()
	typist, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { typist.Close() })
	if err := unix.IoctlSetPointerInt(int(typist.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(typist.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty, typist
}

// A passphrase typed at a terminal is not echoed: the terminal shows only the prompt (on
// stderr), never what was typed.
func TestAPassphraseTypedAtATerminalIsNotEchoed(t *testing.T) {
	tty, typist := openPTY(t)
	file := filepath.Join(t.TempDir(), "accounts.age")
	os.WriteFile(file, []byte("not an export\n"), 0o600)
	var errb bytes.Buffer
	c := &CLI{Stdin: tty, Stdout: &bytes.Buffer{}, Stderr: &errb, Options: testOptions(t)}
	done := make(chan int, 1)
	go func() { done <- c.Run([]string{"accounts", "import", file}) }()
	// Type once the program is reading (its terminal's echo is off), or after a bounded wait on
	// a program that never turns it off.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS); err == nil && tio.Lflag&unix.ECHO == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	typist.WriteString("correct-horse-battery\n")
	select {
	case code := <-done:
		if code != 1 {
			t.Fatalf("exit %d (a file that is not an export)", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command did not finish within 10 s")
	}
	// What the terminal showed: everything there is to read, waiting at most 200 ms for more.
	var shown bytes.Buffer
	buf := make([]byte, 4096)
	for {
		fds := []unix.PollFd{{Fd: int32(typist.Fd()), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 200); n <= 0 || err != nil {
			break
		}
		n, err := unix.Read(int(typist.Fd()), buf)
		if n <= 0 || err != nil {
			break
		}
		shown.Write(buf[:n])
	}
	if strings.Contains(shown.String(), "correct-horse") {
		t.Fatalf("the terminal echoed the passphrase: %q", shown.String())
	}
	if !strings.Contains(errb.String(), "Passphrase (not shown as you type): ") {
		t.Fatalf("no prompt: %q", errb.String())
	}
}
