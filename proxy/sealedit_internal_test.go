package proxy

import (
	"bytes"
	"testing"
)

// A Chat account's input has its compactions put as text in the one edit pass: the relay's own
// is its summary, one nobody re-made for the relay is left out (and counted as sealed content
// left out), everything else goes as it is.
func TestAChatAccountsCompactionsArePutAsText(t *testing.T) {
	s := New(Options{})
	x := &exchange{s: s}
	msg := []byte(`{"type":"message","role":"user","content":"hi"}`)
	own := []byte(`{"type":"compaction","encrypted_content":` + string(s.sealSummary("what was done")) + `}`)
	foreign := []byte(`{"type":"compaction","encrypted_content":"gAAAAB-another-accounts"}`)

	if _, ok := x.expandCompactions([][]byte{msg}); ok {
		t.Fatal("an input without a compaction was changed")
	}
	out, ok := x.expandCompactions([][]byte{msg, own, foreign, msg})
	if !ok {
		t.Fatal("the compactions were not put as text")
	}
	want := [][]byte{msg, summaryItem("what was done"), msg}
	if len(out) != len(want) {
		t.Fatalf("got %d items, want %d: %q", len(out), len(want), out)
	}
	for i := range want {
		if !bytes.Equal(out[i], want[i]) {
			t.Errorf("item %d: got %s, want %s", i, out[i], want[i])
		}
	}
	if x.t.SealedOmitted != 1 || x.t.SealedOmittedParts["compaction"] != 1 || x.t.CompactionRemade != 0 {
		t.Errorf("trace: omitted %d %v, remade %d; want 1 compaction omitted, none remade",
			x.t.SealedOmitted, x.t.SealedOmittedParts, x.t.CompactionRemade)
	}
}
