package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"time"
)

// ServeProcess runs the relay (kind "relay", or a relay of RelayFor: "chat", "compaction") or
// the bare ReverseProxy (kind "bare") of Proxy in this process, in front of upstream: it prints
// its base URL on the first line of out, then answers each "settle" line of in with the settled
// RSS in bytes and the goroutine count, and ends when in closes (Proxy stops it, or died). setup,
// when not nil, runs before the relay or the bare proxy serves (the process-wide settings a real
// relay applies, the same on both sides of the comparison).
func ServeProcess(kind, upstream string, in io.Reader, out io.Writer, setup func()) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	kindOf := kind
	if kind == "bare" {
		kindOf = "relay" // as before: a relay made, never served
	}
	relay, err := RelayFor(kindOf, upstream)
	if err != nil {
		ln.Close()
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		defer stop()
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			if sc.Text() == "settle" {
				if kind == "bare" { // its idle upstream connections go too, as the relay's do
					http.DefaultTransport.(*http.Transport).CloseIdleConnections()
				}
				rss, n := Settle(relay)
				fmt.Fprintln(out, rss, n)
			}
		}
	}()
	fmt.Fprintf(out, "http://%s/v1\n", ln.Addr())
	// The bare proxy runs with the relay's process-wide settings too (its soft memory limit),
	// so that the floor differs from the relay in its handler alone: without the limit its
	// collector let its heap grow where the relay's was held back (2,000 streams: 286 MB
	// against 155 MB with it).
	if setup != nil {
		setup()
	}
	if kind == "bare" {
		srv := &http.Server{Handler: BareProxy(upstream)}
		go func() { <-ctx.Done(); srv.Close() }()
		if err := srv.Serve(ln); err != http.ErrServerClosed {
			return err
		}
		return nil
	}
	return relay.Serve(ctx, ln, time.Second)
}

// StartProcesses returns a ProxyOptions.StartProcess that runs exe with args followed by the
// process kind and "--upstream URL" (for codexrelay: `bench relay-process` or `bench
// bare-process`), which must call ServeProcess. What the child says on stderr goes to stderr;
// a child that does not answer in time is killed: the benchmark fails, never hangs.
func StartProcesses(exe string, stderr io.Writer, args func(kind string) []string) func(kind, upstream string) (*Process, error) {
	return func(kind, upstream string) (*Process, error) {
		cmd := exec.Command(exe, append(args(kind), "--upstream", upstream)...)
		cmd.Stderr = stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		out := bufio.NewReader(stdout)
		answer := func(timeout time.Duration) (string, error) {
			t := time.AfterFunc(timeout, func() { cmd.Process.Kill() })
			defer t.Stop()
			return out.ReadString('\n')
		}
		rp := &Process{PID: cmd.Process.Pid, Stop: func() {
			stdin.Close()
			t := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
			cmd.Wait()
			t.Stop()
		}}
		line, err := answer(30 * time.Second)
		if err != nil {
			rp.Stop()
			return nil, fmt.Errorf("the %s process did not start: %w", kind, err)
		}
		rp.URL = strings.TrimSpace(line)
		rp.Settled = func() (rss int64, goroutines int, err error) {
			if _, err := io.WriteString(stdin, "settle\n"); err != nil {
				return 0, 0, err
			}
			line, err := answer(30 * time.Second)
			if err == nil {
				_, err = fmt.Sscan(line, &rss, &goroutines)
			}
			return rss, goroutines, err
		}
		return rp, nil
	}
}
