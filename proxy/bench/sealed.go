package bench

import (
	"fmt"
	"time"

	"github.com/codexrelay/codexrelay/proxy"
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
	// BytesPerItem is the heap one remembered item costs (a full table of 262144).
	BytesPerItem float64 `json:"bytesPerItem"`
}

// A Codex turn in the middle of a tool loop: the user's message, the reasoning the serving
// account sealed, the call and its output (about 1.3 kB).
const sealedOwn = `{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAABbench-own-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz="}`

const sealedForeign = `{"type":"reasoning","id":"rs_0","summary":[],"encrypted_content":"gAAAABforeign-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz="}`

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
	// The relay learns the serving account's item from the first answer, and that the
	// foreign one is refused from a strip-and-retry.
	for _, b := range []string{sealedBody(), sealedBody(sealedForeign, sealedOwn)} {
		if err := drain(r.post(r.relayURL, b)); err != nil {
			return fmt.Errorf("sealed: %w", err)
		}
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
