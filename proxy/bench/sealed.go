package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/proxy/internal/testkit"
)

// The sealed phase of `bench proxy`: what tracking account-sealed items (reasoning's
// encrypted_content) costs a small Codex-shaped request, with the tracking on against off in
// the same run; and the memory one remembered item costs.
//
// Two cases. A conversation that stayed on its account (its reasoning is the serving
// account's own): the relay learns the item of each answer and finds nothing to leave out.
// A conversation that rotated: the request also carries an item another account sealed,
// which the relay leaves out (its input is split and the body rebuilt); it is compared with
// the body without that item, untracked, which is what the account accepts.

// SealedResult is the sealed phase's result.
type SealedResult struct {
	Requests   int     `json:"requests"` // small requests per side and case
	OnP50Us    float64 `json:"onP50Us"`
	OffP50Us   float64 `json:"offP50Us"`
	AddedP50Us float64 `json:"addedP50Us"` // target: under 5 us
	// After a rotation: one foreign item left out, against the clean body untracked.
	RotatedOnP50Us    float64 `json:"rotatedOnP50Us"`
	RotatedOffP50Us   float64 `json:"rotatedOffP50Us"`
	RotatedAddedP50Us float64 `json:"rotatedAddedP50Us"`
	// A multi-agent turn that stayed: the serving account's own spawn_agent call (its sealed
	// task in the arguments) and the sub-agent's agent message carrying it, on against off.
	MultiAgentOnP50Us    float64 `json:"multiAgentOnP50Us"`
	MultiAgentOffP50Us   float64 `json:"multiAgentOffP50Us"`
	MultiAgentAddedP50Us float64 `json:"multiAgentAddedP50Us"`
	// BytesPerItem is the heap one remembered item costs (a full table of 262144).
	BytesPerItem float64 `json:"bytesPerItem"`
}

// A Codex turn in the middle of a tool loop: the user's message, the reasoning the serving
// account sealed, the call and its output (about 1.3 kB).
const sealedOwn = `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAABbench-own-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz="}`

const sealedForeign = `{"type":"reasoning","id":"rs_0","summary":[],"encrypted_content":"gAAAABforeign-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz="}`

// The serving account's spawn_agent call as Codex replays it (its sealed task in the
// arguments), the call's output, and the sub-agent's task carrying the sealed value.
const (
	sealedSpawn     = `{"type":"function_call","id":"fc_s","call_id":"call_s","namespace":"collaboration","name":"spawn_agent","arguments":"{\"message\":\"gAAAABbench-own-task-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz=\",\"task_name\":\"helper\"}"}`
	sealedSpawnOut  = `{"type":"function_call_output","call_id":"call_s","output":"aborted"}`
	sealedAgentTask = `{"type":"agent_message","author":"/root","recipient":"/root/helper","content":[{"type":"input_text","text":"Message Type: NEW_TASK"},{"type":"encrypted_content","encrypted_content":"gAAAABbench-own-task-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz="}]}`
	// sealedSpawnOutput is the call as the account produced it, naming its sealed argument.
	sealedSpawnOutput = `{"type":"function_call","id":"fc_s","call_id":"call_s","namespace":"collaboration","name":"spawn_agent","arguments":"{\"message\":\"gAAAABbench-own-task-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz=\",\"task_name\":\"helper\"}","encrypted_function_args":["message"]}`
)

func sealedBody(items ...string) string {
	b := `{"model":"bench-sealed","stream":false,"store":false,"include":["reasoning.encrypted_content"],"prompt_cache_key":"bench-conv","input":[` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files in this repository and tell me what each one is for"}]}`
	for _, it := range items {
		b += "," + it
	}
	return b + `,{"type":"function_call","id":"fc_1","call_id":"call_1","name":"shell","arguments":"{\"command\":[\"ls\",\"-la\"]}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"total 48\nREADME.md\nmain.go\ngo.mod\ngo.sum\nMakefile\napp\nproxy\nui\nassets\npackaging"}]}`
}

// sealed alternates blocks of small requests with the tracking on and off, for each case.
func (r *proxyRun) sealed() error {
	res := &r.res.Sealed
	defer r.relay.SetSealedTracking(true)
	n := r.opt.SmallRequests
	res.Requests = n
	// The relay learns the serving account's item from the first answer.
	if err := drain(r.post(r.relayURL, sealedBody())); err != nil {
		return fmt.Errorf("sealed: %w", err)
	}
	measure := func(on, off string) (onP50, offP50 float64, err error) {
		block := min(50, max(1, n/4))
		var a, b []float64
		for i := 0; i < 2*n; i++ {
			tracking := (i/block)%2 == 0
			r.relay.SetSealedTracking(tracking)
			body := off
			if tracking {
				body = on
			}
			d, err := r.timed(body)
			if err != nil {
				return 0, 0, err
			}
			if tracking {
				a = append(a, d)
			} else {
				b = append(b, d)
			}
		}
		return quantile(a, 0.5), quantile(b, 0.5), nil
	}
	var err error
	own := sealedBody(sealedOwn)
	if res.OnP50Us, res.OffP50Us, err = measure(own, own); err != nil {
		return err
	}
	res.AddedP50Us = res.OnP50Us - res.OffP50Us
	multi := sealedBody(sealedOwn, sealedSpawn, sealedSpawnOut, sealedAgentTask)
	if res.MultiAgentOnP50Us, res.MultiAgentOffP50Us, err = measure(multi, multi); err != nil {
		return err
	}
	res.MultiAgentAddedP50Us = res.MultiAgentOnP50Us - res.MultiAgentOffP50Us
	// The conversation rotates: the relay learns from a strip-and-retry that the foreign item
	// is refused, and leaves it out from then on.
	r.relay.SetSealedTracking(true)
	if err := drain(r.post(r.relayURL, sealedBody(sealedForeign, sealedOwn))); err != nil {
		return fmt.Errorf("sealed: %w", err)
	}
	if res.RotatedOnP50Us, res.RotatedOffP50Us, err = measure(sealedBody(sealedForeign, sealedOwn), own); err != nil {
		return err
	}
	res.RotatedAddedP50Us = res.RotatedOnP50Us - res.RotatedOffP50Us
	res.BytesPerItem = proxy.SealedItemBytes()
	return nil
}

// timed posts body to the relay and returns how long the answer took, in microseconds.
func (r *proxyRun) timed(body string) (float64, error) {
	t0 := time.Now()
	if err := drain(r.post(r.relayURL, body)); err != nil {
		return 0, err
	}
	return float64(time.Since(t0).Nanoseconds()) / 1e3, nil
}

// RotationResult is the 1.16 MB Codex request rotated from an account that answers 429 to the
// next one, with reasoning the first account sealed in its input (the next one must not get
// it) against the same rotation with nothing sealed, in the same run; in parse-and-build
// passes of the body (PassOnce), the unit of the large request's target.
type RotationResult struct {
	Bytes       int     `json:"bytes"`
	SealedItems int     `json:"sealedItems"` // reasoning items the first account sealed
	PlainMs     float64 `json:"plainMs"`     // the rotation with nothing sealed
	StrippedMs  float64 `json:"strippedMs"`  // the rotation leaving the sealed items out
	PassMs      float64 `json:"passMs"`
	AddedPasses float64 `json:"addedPasses"` // (stripped - plain) / pass
	// Serializations are the full builds the stripped rotation made (the trace's misses and
	// direct builds): the first account gets the client's bytes as they are.
	Serializations int64 `json:"serializations"`
}

const rotationSealed = 200

// rotationItem is the i-th reasoning item the first account of the rotation seals.
func rotationItem(i int) string {
	return `{"type":"reasoning","id":"rs_` + strconv.Itoa(i) + `","summary":[],"encrypted_content":"gAAAABsealedA-` + strconv.Itoa(i) +
		`-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789"}`
}

// rotationBodies are the synthetic 1.16 MB body with and without rotationSealed reasoning
// items sealed by the first account at the head of its input.
func rotationBodies() (plain, sealed []byte) {
	plain = testkit.SyntheticResponsesBody(10000)
	plain = bytes.Replace(plain, []byte(`"model":"gpt-5-codex"`), []byte(`"model":"bench-rotate"`), 1)
	// No session: each sample starts on the first account (a session would stay on the next).
	if i := bytes.Index(plain, []byte(`"prompt_cache_key":`)); i >= 0 {
		j := i + bytes.IndexByte(plain[i+len(`"prompt_cache_key":"`):], '"') + len(`"prompt_cache_key":"`) + 2
		plain = append(plain[:i:i], plain[j:]...)
	}
	var items []byte
	for i := range rotationSealed {
		items = append(append(items, rotationItem(i)...), ',')
	}
	at := bytes.Index(plain, []byte(`"input":[`)) + len(`"input":[`)
	sealed = append(append(append([]byte{}, plain[:at]...), items...), plain[at:]...)
	return plain, sealed
}

// rotation measures RotationResult on a relay of its own with two accounts on the bench
// upstream: "a" answers the large request 429 (and, once, a small one with the sealed items,
// so that the relay knows they are a's), "b" refuses any of a's items. The relay's clock moves
// a minute past a's cooldown between samples, so that each sample rotates.
func (r *proxyRun) rotation() error {
	res := &r.res.Rotation
	var offset atomic.Int64
	relay := proxy.New(proxy.Options{Hold: -1, Now: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) },
		Catalog: proxy.CatalogOptions{RefreshInterval: -1, TTL: 10000 * time.Hour}})
	relay.SetAccounts([]proxy.Account{
		{Name: "a", Kind: proxy.KindOpenAI, BaseURL: r.up.url + "/v1", Credentials: proxy.Static{Token: "sk-a"}},
		{Name: "b", Kind: proxy.KindOpenAI, BaseURL: r.up.url + "/v1", Credentials: proxy.Static{Token: "sk-b"}},
	})
	url, stop, err := serveOnLoopback(relay)
	if err != nil {
		return err
	}
	defer stop()
	// a answers a small request with the items it sealed: the relay learns them.
	if err := drain(r.post(url, `{"model":"bench-rotate","stream":false,"input":"learn"}`)); err != nil {
		return fmt.Errorf("rotation: %w", err)
	}
	plain, sealed := rotationBodies()
	res.Bytes, res.SealedItems = len(plain), rotationSealed
	once := func(body []byte) (float64, error) {
		offset.Add(int64(61 * time.Second))
		t0 := time.Now()
		if err := drain(r.post(url, string(body))); err != nil {
			return 0, err
		}
		return ms(time.Since(t0)), nil
	}
	var ps, ss, passes []float64
	for i := 0; i < max(20, r.opt.LargeRequests/2); i++ {
		runtime.GC()
		p, err := once(plain)
		if err != nil {
			return fmt.Errorf("rotation without sealed items: %w", err)
		}
		s, err := once(sealed)
		if err != nil {
			return fmt.Errorf("rotation with sealed items: %w", err)
		}
		ps, ss, passes = append(ps, p), append(ss, s), append(passes, PassOnce(sealed))
	}
	if tr := relay.Traces(1); len(tr) == 1 {
		if tr[0].SealedOmitted != rotationSealed || len(tr[0].Attempts) != 2 {
			return fmt.Errorf("rotation: the trace says %d items left out over %d attempts", tr[0].SealedOmitted, len(tr[0].Attempts))
		}
		res.Serializations = tr[0].Serialization.Misses + tr[0].Serialization.Direct - 1 // less a's bytes as they came
	}
	res.PlainMs, res.StrippedMs, res.PassMs = quantile(ps, 0.5), quantile(ss, 0.5), quantile(passes, 0.5)
	res.AddedPasses = ratio(res.StrippedMs-res.PlainMs, res.PassMs)
	return nil
}

// serveOnLoopback serves relay on a loopback port of its own until stop is called; url is its
// base URL, ending in /v1.
func serveOnLoopback(relay *proxy.Server) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- relay.Serve(ctx, ln, time.Second) }()
	return "http://" + ln.Addr().String() + "/v1", func() { cancel(); <-served }, nil
}
