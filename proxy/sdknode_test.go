package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
	"github.com/codexrelay/codexrelay/proxy/sse"
)

// The official OpenAI Node SDK (npm's openai, pinned in the Makefile, which installs it into
// bin/openai-node-<version>) drives the relay, whose only account speaks Chat Completions:
// create, stream, parse, and a tool round trip over HTTP with previous_response_id
// (testdata/openai-node/responses.mjs). Every answer the SDK received is checked here against
// the full Response schema.

// openaiNodeModules is the node_modules folder that holds npm's openai: OPENAI_NODE_MODULES (make
// test sets it), else the checkout's bin/openai-node-*; "" when neither has it.
func openaiNodeModules() string {
	dirs := []string{os.Getenv("OPENAI_NODE_MODULES")}
	found, _ := filepath.Glob("../bin/openai-node-*/node_modules")
	for i := len(found) - 1; i >= 0; i-- {
		dirs = append(dirs, found[i])
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "openai", "package.json")); err == nil {
			abs, _ := filepath.Abs(d)
			return abs
		}
	}
	return ""
}

// sdkChat is the Chat server behind the SDK's requests: JSON for a structured answer, the shell
// tool's call to a request with tools, the tool's result quoted, else a greeting.
var sdkChat = chatServer(func(req chatRequest, n int) (string, string) {
	last := req.Messages[len(req.Messages)-1]
	switch {
	case len(req.ResponseFormat) > 0:
		return `{"answer":42}`, ""
	case last.Role == "tool":
		return fmt.Sprintf("The tool said: %v", last.Content), ""
	case len(req.Tools) > 0:
		return "", fmt.Sprintf("call_%d", n)
	}
	return "Hello from the relay.", ""
})

func TestOpenAINodeSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	modules := openaiNodeModules()
	missing := ""
	switch {
	case err != nil:
		missing = "node is not on PATH"
	case modules == "":
		missing = "npm's openai is not installed (make test installs it into bin/openai-node-<version>)"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(missing)
		}
		t.Skip(missing + ": run make test")
	}
	up := newUpstream(t, sdkChat)
	r := newRelay(t, proxy.Options{}, chatAccount("llama", up))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/openai-node/responses.mjs", r.URL+"/v1")
	cmd.Env = append(os.Environ(), "OPENAI_NODE_MODULES="+modules)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the SDK script failed (%v):\n%s%s", err, stderr.Bytes(), stdout.Bytes())
	}
	out := strings.TrimSpace(stdout.String())
	var got struct {
		Calls  int
		Bodies []struct {
			Status int
			Type   string
			Text   string
		}
	}
	if err := json.Unmarshal([]byte(out[strings.LastIndexByte(out, '\n')+1:]), &got); err != nil {
		t.Fatalf("the script's report: %v\n%s", err, out)
	}
	if len(got.Bodies) != got.Calls || got.Calls != 8 {
		t.Fatalf("%d answers for %d calls", len(got.Bodies), got.Calls)
	}
	checked := 0
	for i, b := range got.Bodies {
		switch {
		case b.Status == 400:
			if !strings.Contains(b.Text, `"code":"previous_response_not_found"`) {
				t.Errorf("answer %d: %s", i, b.Text)
			}
		case b.Status != 200:
			t.Errorf("answer %d: status %d %s", i, b.Status, b.Text)
		case strings.HasPrefix(b.Type, "text/event-stream"):
			var datas [][]byte
			rd := sse.NewReader(strings.NewReader(b.Text), 1<<20)
			for {
				ev, err := rd.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("answer %d: %v", i, err)
				}
				datas = append(datas, bytes.Clone(ev.Data)) // the reader reuses its buffer
			}
			n, err := testkit.CheckResponseEvents(datas)
			if err != nil || n != 3 {
				t.Errorf("answer %d: %d response objects: %v", i, n, err)
			}
			checked += n
		default:
			if err := testkit.CheckResponse([]byte(b.Text)); err != nil {
				t.Errorf("answer %d: %v\n%s", i, err, b.Text)
			}
			checked++
		}
	}
	// The tool result reached the Chat server after its call, the conversation replayed.
	var roundTrip string
	for n := range up.requests() {
		if s := roles(t, up, n); strings.Contains(s, "tool ") {
			roundTrip = s
		}
	}
	if !strings.HasPrefix(roundTrip, "system, user, assistant call call_") || !strings.Contains(roundTrip, ", tool call_") {
		t.Errorf("the tool round trip reached the Chat server as %q", roundTrip)
	}
	t.Logf("%d SDK calls, %d response objects checked", got.Calls, checked)
}
