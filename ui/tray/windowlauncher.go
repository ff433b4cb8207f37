package tray

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// windowLauncher is the tray process's side of the window process: it starts
// `codexrelay window NAME` when a window is asked for and none runs, and hands a running one
// the next names. One window process at a time.
//
// The pipe protocol, one line each: the tray writes "api BASE TOKEN" (the window API) first,
// then "open NAME" for each later window; the window process answers "shown NAME" on its
// standard output once the window is on screen. Its standard input closing (the tray left)
// ends it.
type windowLauncher struct {
	// command is the window process for a first window name (exe window NAME).
	command func(name string) *exec.Cmd
	base    string // the window API's base URL
	token   string
	log     *slog.Logger
	// ended, when set, is called after each window process ended.
	ended func()
	// patience is how long to wait for a window to be shown; grace how long Close waits for
	// the window process to leave (0: quitGrace).
	patience, grace time.Duration

	req sync.Mutex // one request at a time

	mu     sync.Mutex
	cur    *windowProc
	closed bool
}

// windowProc is one running window process.
type windowProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	shown chan string   // the names it showed
	done  chan struct{} // closed when it ended
}

// errLauncherClosed says the tray is leaving: no new window process starts.
var errLauncherClosed = errors.New("the tray is leaving")

// Open asks for the window name (any goroutine; it does not wait).
func (l *windowLauncher) Open(name string) {
	go func() {
		if err := l.open(name); err != nil && err != errLauncherClosed {
			l.log.Warn("cannot open a window", "window", name, "error", err)
		}
	}()
}

// open shows window name and returns once it is shown. A window process that ends before it
// showed the window (its last window was closing as the request came) is replaced once.
func (l *windowLauncher) open(name string) error {
	l.req.Lock()
	defer l.req.Unlock()
	for try := 0; try < 2; try++ {
		p, fresh, err := l.proc(name)
		if err != nil {
			return err
		}
		if !fresh {
			if _, err := fmt.Fprintf(p.in, "open %s\n", name); err != nil {
				<-p.done
				continue
			}
		}
		wait := time.NewTimer(l.patience)
		for waiting := true; waiting; {
			select {
			case got := <-p.shown:
				if got == name {
					wait.Stop()
					return nil
				}
			case <-p.done:
				waiting = false
			case <-wait.C:
				return fmt.Errorf("the window process did not show %q within %s", name, l.patience)
			}
		}
		wait.Stop()
	}
	return fmt.Errorf("the window process ended twice before showing %q", name)
}

// proc is the running window process, or a new one started for name (fresh).
func (l *windowLauncher) proc(name string) (p *windowProc, fresh bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, false, errLauncherClosed
	}
	if l.cur != nil {
		select {
		case <-l.cur.done:
		default:
			return l.cur, false, nil
		}
	}
	cmd := l.command(name)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, false, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, false, err
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr // its log goes where the tray's goes
	}
	if err := cmd.Start(); err != nil {
		return nil, false, fmt.Errorf("cannot start the window process: %w", err)
	}
	p = &windowProc{cmd: cmd, in: in, shown: make(chan string, 16), done: make(chan struct{})}
	fmt.Fprintf(in, "api %s %s\n", l.base, l.token)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if n, ok := strings.CutPrefix(sc.Text(), "shown "); ok {
				select {
				case p.shown <- n:
				default:
				}
			}
		}
		err := cmd.Wait()
		l.log.Debug("window process ended", "pid", cmd.Process.Pid, "error", err)
		l.mu.Lock()
		if l.cur == p {
			l.cur = nil
		}
		l.mu.Unlock()
		close(p.done)
		if l.ended != nil {
			l.ended()
		}
	}()
	l.cur = p
	return p, true, nil
}

// running says whether a window process runs.
func (l *windowLauncher) running() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur != nil
}

// quitGrace is how long Close lets the window process leave by itself once its input closed
// (it exits at once: window.TrayLeft) before it ends it: Quit is to take under 0.2 s with a
// window open, as without one.
const quitGrace = 150 * time.Millisecond

// Close ends the window process (its input closes; after quitGrace it is killed) and starts no
// other.
func (l *windowLauncher) Close() {
	l.mu.Lock()
	l.closed = true
	p := l.cur
	l.mu.Unlock()
	if p == nil {
		return
	}
	p.in.Close()
	grace := l.grace
	if grace == 0 {
		grace = quitGrace
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.cmd.Process.Kill()
		l.log.Debug("the window process did not leave with the tray: ended", "pid", p.cmd.Process.Pid)
		t.Reset(grace)
		select { // its end is seen (unless a child of its own holds its output)
		case <-p.done:
		case <-t.C:
		}
	}
}
