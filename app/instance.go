package app

import (
	"bufio"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// One Codex Relay (the tray app or `serve`) runs per settings folder. It holds instance.lock
// for as long as it runs and describes itself in instance.json: its mode, its process id,
// where its relay listens and, for the tray app, a loopback control port that a second launch
// uses to bring the dashboard to the front.
const (
	instanceLockName = "instance.lock"
	instanceInfoName = "instance.json"
	// claimPatience is how long a claim retries a held lock: a CLI command that looks for a
	// running relay holds it for a moment, and must not make a starting relay believe that
	// another one runs.
	claimPatience = 250 * time.Millisecond
)

// InstanceInfo describes the running Codex Relay.
type InstanceInfo struct {
	PID     int    `json:"pid"`
	Mode    string `json:"mode"`             // "tray" or "serve"
	Listen  string `json:"listen,omitempty"` // where its relay serves; "" while it does not
	Paused  bool   `json:"paused,omitempty"`
	Control string `json:"control,omitempty"` // loopback address of the tray's control port
	Token   string `json:"token,omitempty"`   // what the control port asks for (the file is 0600)
	// Secret is what the programs of this folder sign their requests to the relay with, and
	// the relay its answers (proxy/instanceauth.go): it never travels.
	Secret  string    `json:"secret,omitempty"`
	Started time.Time `json:"started"`
}

// String says what runs and where, for messages.
func (i *InstanceInfo) String() string {
	what := "the tray app"
	if i.Mode == "serve" {
		what = "`codexrelay serve`"
	}
	s := fmt.Sprintf("%s, pid %d", what, i.PID)
	switch {
	case i.Paused:
		s += ", its relay paused"
	case i.Listen != "":
		s += ", relay on " + i.Listen
	default:
		s += ", its relay not serving"
	}
	return s
}

// Instance is this process's claim to be the running Codex Relay of a settings folder.
type Instance struct {
	dir  string
	lock *flock.Flock

	mu   sync.Mutex
	info InstanceInfo
	ln   net.Listener
	// retakeFailed is retake's last failure, so that a folder lost for good is reported once.
	retakeFailed string
}

// ClaimInstance makes this process the running Codex Relay of dir in mode "tray" or "serve".
// When another one runs, it returns that one's description and no Instance, having written
// nothing.
func ClaimInstance(dir, mode string) (*Instance, *InstanceInfo, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("cannot create the settings folder: %w", err)
	}
	l := flock.New(filepath.Join(dir, instanceLockName), flock.SetPermissions(0o600))
	deadline := time.Now().Add(claimPatience)
	for {
		ok, err := l.TryLock()
		if err != nil {
			return nil, nil, fmt.Errorf("cannot lock %s: %w", l.Path(), err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			other := readInstanceInfo(dir)
			if other == nil {
				other = &InstanceInfo{Mode: "unknown"}
			}
			return nil, other, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	in := &Instance{dir: dir, lock: l, info: InstanceInfo{PID: os.Getpid(), Mode: mode, Secret: newID() + newID(), Started: time.Now().UTC()}}
	if err := in.write(); err != nil {
		l.Unlock()
		return nil, nil, err
	}
	claims.Store(folderKey(dir), in)
	return in, nil, nil
}

// claims holds this process's Instance of each settings folder it claimed, by folderKey: the
// running relay's own reads of its folder (moving a corrupt file aside, taking the folder
// back after it was deleted) are for the claim holder only.
var claims sync.Map

// folderKey is a settings folder's absolute path: how claims and keychain entries name it.
func folderKey(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return filepath.Clean(dir)
}

// claimOf returns this process's claim on dir, or nil when it holds none.
func claimOf(dir string) *Instance {
	if in, ok := claims.Load(folderKey(dir)); ok {
		return in.(*Instance)
	}
	return nil
}

// holdsFolder reports whether this instance's lock is still the instance.lock of its folder:
// after the folder was deleted (or moved away) the lock is held on a file that has no name
// there any more, and a second relay would find the folder free.
func (in *Instance) holdsFolder() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	held, err := in.lock.Stat()
	if err != nil {
		return false
	}
	there, err := os.Stat(filepath.Join(in.dir, instanceLockName))
	return err == nil && os.SameFile(held, there)
}

// retake recreates the folder's instance lock (and description) after the folder was deleted,
// so that a second relay still finds this one running. It fails when another process took the
// new lock first; fresh says whether this failure differs from the previous one.
func (in *Instance) retake() (fresh bool, err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	defer func() {
		msg := fmt.Sprint(err)
		fresh = err != nil && msg != in.retakeFailed
		if in.retakeFailed = ""; err != nil {
			in.retakeFailed = msg
		}
	}()
	if err := os.MkdirAll(in.dir, 0o700); err != nil {
		return false, fmt.Errorf("cannot create the settings folder: %w", err)
	}
	l := flock.New(filepath.Join(in.dir, instanceLockName), flock.SetPermissions(0o600))
	ok, err := l.TryLock()
	if err != nil {
		return false, fmt.Errorf("cannot lock %s: %w", l.Path(), err)
	}
	if !ok {
		return false, fmt.Errorf("another Codex Relay claimed %s after it was deleted", in.dir)
	}
	old := in.lock
	in.lock = l
	old.Unlock()
	return false, in.write()
}

// RunningInstance describes the Codex Relay running for dir, or returns nil when none runs.
func RunningInstance(dir string) *InstanceInfo {
	path := filepath.Join(dir, instanceLockName)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	l := flock.New(path)
	ok, err := l.TryRLock()
	if err != nil {
		return nil
	}
	if ok {
		l.Unlock()
		return nil
	}
	// Held: its description may lag its start by a moment.
	for range 50 {
		if info := readInstanceInfo(dir); info != nil {
			return info
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &InstanceInfo{Mode: "unknown"}
}

func readInstanceInfo(dir string) *InstanceInfo {
	b, err := os.ReadFile(filepath.Join(dir, instanceInfoName))
	if err != nil {
		return nil
	}
	var info InstanceInfo
	if json.Unmarshal(b, &info) != nil || info.PID == 0 {
		return nil
	}
	return &info
}

// Secret is the instance secret its relay's answers are signed with (InstanceInfo.Secret).
func (in *Instance) Secret() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.info.Secret
}

// Serving records where this instance's relay listens ("" when it does not) and whether the
// user paused it.
func (in *Instance) Serving(listen string, paused bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.info.Listen == listen && in.info.Paused == paused {
		return
	}
	in.info.Listen, in.info.Paused = listen, paused
	in.write()
}

func (in *Instance) write() error {
	b, _ := json.MarshalIndent(in.info, "", "  ")
	// Never through a link: the description is the relay's own file, in its folder.
	return replaceFile(filepath.Join(in.dir, instanceInfoName), append(b, '\n'), 0o600)
}

// The control port's bounds. It answers one command, "show TOKEN\n", to processes of this
// user; any local user can connect, so a connection is read only as far as that command can
// go, for a short while, and only a few are served at once.
const (
	controlCommand = "show "
	// controlDeadline bounds a connection's whole life.
	controlDeadline = 2 * time.Second
	// controlConns bounds the connections served at once; one more is told "busy" and closed.
	controlConns = 8
)

// OnShow opens the control port: a second launch of the tray app calls show (from the
// control port's goroutine) instead of starting.
func (in *Instance) OnShow(show func()) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	in.mu.Lock()
	in.ln = ln
	in.info.Control, in.info.Token = ln.Addr().String(), newID()+newID()
	token := in.info.Token
	err = in.write()
	in.mu.Unlock()
	go serveControl(ln, token, show)
	return err
}

// serveControl answers the control port's connections until ln is closed.
func serveControl(ln net.Listener, token string, show func()) {
	slots := make(chan struct{}, controlConns)
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			c.SetDeadline(time.Now().Add(controlDeadline))
			c.Write([]byte("busy\n"))
			c.Close()
			continue
		}
		go func() {
			defer func() { <-slots }()
			defer c.Close()
			c.SetDeadline(time.Now().Add(controlDeadline))
			got, err := readControlLine(c, len(controlCommand)+len(token))
			if err != nil || subtle.ConstantTimeCompare([]byte(got), []byte(controlCommand+token)) != 1 {
				c.Write([]byte("refused\n"))
				return
			}
			show()
			c.Write([]byte("ok\n"))
		}()
	}
}

// readControlLine reads one line of at most max bytes (its newline, and a carriage return
// before it, not counted) from r, never more than max+2 bytes: a peer that sends more, or no
// newline, gets an error.
func readControlLine(r io.Reader, max int) (string, error) {
	line, err := bufio.NewReaderSize(io.LimitReader(r, int64(max)+2), max+2).ReadString('\n')
	if err != nil {
		return "", errors.New("no command line within its length")
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if len(line) > max {
		return "", errors.New("command line too long")
	}
	return line, nil
}

// Release ends the claim (at exit).
func (in *Instance) Release() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.ln != nil {
		in.ln.Close()
	}
	os.Remove(filepath.Join(in.dir, instanceInfoName))
	in.lock.Unlock()
	claims.CompareAndDelete(folderKey(in.dir), in)
}

// Show asks the running tray app to bring its dashboard to the front.
func (i *InstanceInfo) Show() error {
	if i.Control == "" {
		return errors.New("it has no control port")
	}
	c, err := net.DialTimeout("tcp", i.Control, 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := fmt.Fprintf(c, "show %s\n", i.Token); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "ok" {
		return errors.New("it refused")
	}
	return nil
}
