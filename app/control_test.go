package app

import (
	"bufio"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// endless is a peer that never sends a newline; it counts what was read from it.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	e.n += len(p)
	return len(p), nil
}

func TestTheControlLineIsReadOnlyToItsLength(t *testing.T) {
	const max = len(controlCommand) + 32
	r := &endless{}
	if _, err := readControlLine(r, max); err == nil {
		t.Fatal("a line without a newline was accepted")
	}
	if r.n > max+2 {
		t.Fatalf("read %d bytes for a command of at most %d", r.n, max)
	}
	if got, err := readControlLine(strings.NewReader("show abc\r\nmore"), 8); err != nil || got != "show abc" {
		t.Fatalf("a command of its length: %q %v", got, err)
	}
	if _, err := readControlLine(strings.NewReader("show abcd\n"), 8); err == nil {
		t.Fatal("a longer line was accepted")
	}
}

// The attack of issue 24: connections that send megabytes without a newline. Each is cut after
// its command's length, so none of the 64 MiB a peer tries to send is taken in (an unbounded
// read would have taken it all, for every connection); the port keeps answering the owner.
func TestTheControlPortCutsPeersThatSendNoNewline(t *testing.T) {
	inst, _, err := ClaimInstance(t.TempDir(), "tray")
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Release()
	shown := make(chan struct{}, 16)
	if err := inst.OnShow(func() { shown <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	info := readInstanceInfo(inst.dir)
	const peers, attempt = 8, 64 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	sent := make([]int, peers)
	for i := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", info.Control)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			chunk := make([]byte, 64<<10)
			for sent[i] < attempt {
				n, err := c.Write(chunk)
				sent[i] += n
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	// An unbounded read holds what each peer sent (the old port grew by gigabytes); the
	// bounded one allocates its small buffers.
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Errorf("the control port allocated %d bytes while %d peers sent megabytes without a newline", n, peers)
	} else {
		t.Logf("%d peers sent %v bytes without a newline; the process allocated %d bytes meanwhile", peers, sent, n)
	}
	for i, n := range sent {
		if n >= attempt {
			t.Errorf("peer %d sent all of its %d bytes without a newline: the port kept reading", i, n)
		}
	}
	showWithRetry(t, info)
}

// showWithRetry asks the control port to show the dashboard, retrying while it is busy.
func showWithRetry(t *testing.T, info *InstanceInfo) {
	t.Helper()
	var err error
	for range 250 {
		if err = info.Show(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the owner's show: %v", err)
}

func TestTheControlPortBoundsItsConnections(t *testing.T) {
	inst, _, err := ClaimInstance(t.TempDir(), "tray")
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Release()
	if err := inst.OnShow(func() {}); err != nil {
		t.Fatal(err)
	}
	info := readInstanceInfo(inst.dir)
	var idle []net.Conn
	for range controlConns {
		c, err := net.Dial("tcp", info.Control)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	// Accepted in order: the connections above hold every slot when this one is accepted.
	c, err := net.Dial("tcp", info.Control)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if line != "busy\n" {
		t.Fatalf("one connection over the bound: %q %v", line, err)
	}
	for _, c := range idle {
		c.Close()
	}
	showWithRetry(t, info)
}
