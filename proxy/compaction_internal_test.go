package proxy

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCompactionStoreKeepsTwoPerConversationWithinItsBudget(t *testing.T) {
	cs := newCompactionStore(1 << 20)
	body := func(n int) []byte { return []byte(fmt.Sprintf(`{"model":"m","input":[{"type":"message","n":%d}]}`, n)) }
	for i := range 5 {
		cs.keep(uint64(i), "conv-1", "a", []byte(`"gAAAAB1"`), body(i))
	}
	for d, want := range []bool{false, false, false, true, true} {
		if _, _, ok := cs.request(uint64(d)); ok != want {
			t.Fatalf("compaction %d kept: %v, want %v (the latest two of a conversation)", d, ok, want)
		}
	}
	got, sealer, _ := cs.request(4)
	if !bytes.Equal(got, body(4)) || sealer != "a" {
		t.Fatalf("request 4: %s by %q", got, sealer)
	}

	// Past its budget, the store forgets the least recently used, whatever the conversation.
	noise := func() []byte { // incompressible, so that the budget counts it
		b := make([]byte, 100<<10)
		for i := range b {
			b[i] = byte(rand.IntN(256))
		}
		return b
	}
	for i := range 15 {
		cs.keep(uint64(100+i), fmt.Sprintf("conv-%d", 100+i), "a", []byte(`"gAAAAB2"`), noise())
	}
	if size, n := cs.usage(); size > 1<<20 {
		t.Fatalf("the store holds %d bytes in %d entries, over its budget of 1 MiB", size, n)
	}
	if _, _, ok := cs.request(100); ok {
		t.Fatal("the least recently used compaction was kept past the budget")
	}
	if _, _, ok := cs.request(114); !ok {
		t.Fatal("the latest compaction was forgotten")
	}
	// A request larger than an eighth of the budget is not kept.
	big := append(noise(), noise()...)
	cs.keep(999, "conv-big", "a", []byte(`"gAAAAB3"`), big)
	if _, _, ok := cs.request(999); ok {
		t.Fatal("a request over an eighth of the budget was kept")
	}
}

func TestCompactionStoreRemembersWhatEachAccountMade(t *testing.T) {
	cs := newCompactionStore(0)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if _, ask := cs.remadeFor(1, "b", now); ask {
		t.Fatal("asked to re-make a compaction whose request is not kept")
	}
	cs.keep(1, "conv", "a", []byte(`"gAAAAB4"`), []byte(`{"input":[]}`))
	if item, ask := cs.remadeFor(1, "b", now); item != nil || !ask {
		t.Fatal("a kept compaction is not to be re-made")
	}
	cs.setRemade(1, "b", []byte(`{"type":"compaction"}`), time.Time{})
	if item, ask := cs.remadeFor(1, "b", now); item == nil || ask {
		t.Fatal("b's compaction was not kept")
	}
	cs.setRemade(1, "c", nil, now.Add(cannotRetry))
	if _, ask := cs.remadeFor(1, "c", now.Add(time.Minute)); ask {
		t.Fatal("c, which could not compact, is asked again at once")
	}
	if _, ask := cs.remadeFor(1, "c", now.Add(cannotRetry+time.Second)); !ask {
		t.Fatal("c is never asked again")
	}
}

// With a folder, the kept requests are files only the user can read, and a store opened on the
// folder later (a relay that starts again) reads them back: who sealed which value in which
// conversation, and the request itself.
func TestCompactionStoreOnDiskOutlivesTheProcess(t *testing.T) {
	dir := t.TempDir() + "/compactions"
	t1 := newSealTable(0)
	cs := newCompactionStore(0)
	if err := cs.open(dir, t1.learnSealer); err != nil {
		t.Fatal(err)
	}
	value := []byte(`"gAAAABcompaction-of-a=="`)
	body := []byte(`{"model":"m","input":[{"type":"compaction_trigger"}]}`)
	cs.keep(t1.digest(value), "conv", "a", value, body)
	files, _ := filepath.Glob(dir + "/*" + compactionExt)
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	if st, _ := os.Stat(files[0]); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Fatalf("folder mode %v", st.Mode())
	}
	os.WriteFile(dir+"/junk"+compactionExt, []byte("not ours"), 0o600)

	// Another process: a new seal table and store on the same folder.
	t2 := newSealTable(0)
	cs2 := newCompactionStore(0)
	if err := cs2.open(dir, t2.learnSealer); err != nil {
		t.Fatal(err)
	}
	if owner, ok := t2.owner(value); !ok || owner != "a" || !t2.foreignIn("conv", "b") {
		t.Fatalf("the seal table did not learn the sealer again: %q %v", owner, ok)
	}
	got, sealer, ok := cs2.request(t2.digest(value))
	if !ok || sealer != "a" || !bytes.Equal(got, body) {
		t.Fatalf("request %s by %q (%v)", got, sealer, ok)
	}
	if _, err := os.Stat(dir + "/junk" + compactionExt); !os.IsNotExist(err) {
		t.Fatal("a file that is no kept compaction was left")
	}
	// Forgotten, its file goes: a newer compaction of the conversation, twice.
	for i := range 2 {
		v := []byte(fmt.Sprintf(`"gAAAABnewer-%d"`, i))
		cs2.keep(t2.digest(v), "conv", "a", v, body)
	}
	if _, err := os.Stat(files[0]); !os.IsNotExist(err) {
		t.Fatal("the file of a forgotten compaction is still there")
	}
}
