//go:build unix

package app

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestImportCodexReadsOnlyASmallRegularFile(t *testing.T) {
	opt := testOptions(t, Keychain{})
	a, _ := OpenRelay(opt)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	os.WriteFile(big, make([]byte, maxAuthFile+1), 0o600)
	for path, want := range map[string]string{
		fifo:        "is not a regular file (a FIFO)",
		"/dev/zero": "is not a regular file (a device)",
		dir:         "is not a regular file (a folder)",
		big:         "larger than the 1 MiB a Codex auth.json may have",
	} {
		done := make(chan error, 1)
		go func() { _, _, err := a.ImportCodex(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v", path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the import hangs", path)
		}
	}
}
