package app

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// readBounded reads the regular file at path (following links) if it holds at most max bytes;
// what names the file in the errors ("a Codex auth.json"). A FIFO, a device, a socket or a
// folder is refused before anything is read from it, and is never waited on: the file is
// opened without blocking and checked once open, so that one swapped in after the first look
// is refused too. A file that grows while it is read is cut at max+1 bytes and refused.
func readBounded(path string, max int64, what string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s), so it is not %s", path, fileKind(st.Mode()), what)
	}
	if st.Size() > max {
		return nil, &tooLargeError{path, what, max}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file, so it is not %s", path, what)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, &tooLargeError{path, what, max}
	}
	return b, nil
}

// errTooLarge is what readBounded's refusal of a file larger than its bound is (errors.Is).
var errTooLarge = errors.New("file too large")

type tooLargeError struct {
	path, what string
	max        int64
}

func (e *tooLargeError) Error() string {
	size := fmt.Sprintf("%d bytes", e.max)
	if e.max >= 1<<20 && e.max%(1<<20) == 0 {
		size = fmt.Sprintf("%d MiB", e.max>>20)
	}
	return fmt.Sprintf("%s is larger than the %s %s may have", e.path, size, e.what)
}

func (e *tooLargeError) Is(target error) bool { return target == errTooLarge }

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a plain file"
}
