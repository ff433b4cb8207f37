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
	value := func(n int) []byte { return []byte(fmt.Sprintf(`"gAAAAB1-%d"`, n)) }
	// A conversation's chain: each compaction's request holds the one before it.
	for i := range 5 {
		var parents [][]byte
		if i > 0 {
			parents = [][]byte{value(i - 1)}
		}
		cs.keep(uint64(i), "conv-1", "a", value(i), body(i), parents)
	}
	// A second client reusing the conversation's prompt_cache_key, with a chain of its own.
	cs.keep(50, "conv-1", "a", value(50), body(50), nil)
	cs.keep(51, "conv-1", "a", value(51), body(51), [][]byte{value(50)})
	for d, want := range map[int]bool{0: false, 1: false, 2: false, 3: true, 4: true, 50: true, 51: true} {
		if _, _, ok := cs.request(uint64(d)); ok != want {
			t.Fatalf("compaction %d kept: %v, want %v (the latest two of each chain)", d, ok, want)
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
		cs.keep(uint64(100+i), fmt.Sprintf("conv-%d", 100+i), "a", []byte(fmt.Sprintf(`"gAAAAB2-%d"`, i)), noise(), nil)
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
	cs.keep(999, "conv-big", "a", []byte(`"gAAAAB3"`), big, nil)
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
	cs.keep(1, "conv", "a", []byte(`"gAAAAB4"`), []byte(`{"input":[]}`), nil)
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
	cs.keep(t1.digest(value), "conv", "a", value, body, nil)
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
	// Forgotten, its file goes: a newer compaction of the conversation, twice (each holding
	// the one before: the parents outlive the restart in the header).
	prev := value
	for i := range 2 {
		v := []byte(fmt.Sprintf(`"gAAAABnewer-%d"`, i))
		cs2.keep(t2.digest(v), "conv", "a", v, body, [][]byte{prev})
		prev = v
	}
	if _, err := os.Stat(files[0]); !os.IsNotExist(err) {
		t.Fatal("the file of a forgotten compaction is still there")
	}
}

// compactions/ is the user's (issue 49): a folder made 0777 is brought back to 0700, a file
// over an entry's bound is skipped before it is counted (it evicts nothing), a file swapped
// while the relay runs is not read as its entry, and a file another user owns is skipped.
func TestCompactionStoreTrustsOnlyTheUsersFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "compactions")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	tbl := newSealTable(0)
	cs := newCompactionStore(1 << 20)
	if err := cs.open(dir, tbl.learnSealer); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Fatalf("a 0777 folder stayed %v", st.Mode().Perm())
	}
	body := []byte(`{"model":"m","input":[{"type":"compaction_trigger"}]}`)
	for i := range 3 {
		v := []byte(fmt.Sprintf(`"gAAAABkept-%d"`, i))
		cs.keep(tbl.digest(v), fmt.Sprintf("conv-%d", i), "a", v, body, nil)
	}
	// A sparse file far over an entry's bound, with a valid header.
	huge := []byte(`"gAAAABhuge"`)
	head := `{"sealer":"a","session":"x","value":"gAAAABhuge","made":"2030-01-01T00:00:00Z"}` + "\n"
	hugeName := filepath.Join(dir, compactionName(huge)+compactionExt)
	f, err := os.Create(hugeName)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(head)
	if err := f.Truncate(20 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()

	tbl2 := newSealTable(0)
	cs2 := newCompactionStore(1 << 20)
	if err := cs2.open(dir, tbl2.learnSealer); err != nil {
		t.Fatal(err)
	}
	if _, n := cs2.usage(); n != 3 {
		t.Fatalf("after a 20 GB file was planted, %d of 3 kept compactions are left", n)
	}
	if _, ok := tbl2.owner(huge); ok {
		t.Fatal("the planted file was read as a kept compaction")
	}
	// A file swapped for another compaction's while the relay runs is not read as its entry.
	v0, v1 := []byte(`"gAAAABkept-0"`), []byte(`"gAAAABkept-1"`)
	n0, n1 := filepath.Join(dir, compactionName(v0)+compactionExt), filepath.Join(dir, compactionName(v1)+compactionExt)
	swapped, _ := os.ReadFile(n1)
	os.WriteFile(n0, swapped, 0o600)
	if _, _, ok := cs2.request(tbl2.digest(v0)); ok {
		t.Fatal("a swapped file was read as its entry")
	}
	if _, _, ok := cs2.request(tbl2.digest(v1)); !ok {
		t.Fatal("an untouched file was refused")
	}
	// A file another user owns is skipped (only root can make one here).
	if os.Getuid() != 0 {
		return
	}
	if err := os.Chown(n1, 54321, 54321); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := cs2.request(tbl2.digest(v1)); ok {
		t.Fatal("a file another user owns was read")
	}
	cs3 := newCompactionStore(1 << 20)
	if err := cs3.open(dir, newSealTable(0).learnSealer); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(n1); err != nil {
		t.Fatal("a file another user owns was removed")
	}
	for _, e := range cs3.entries {
		if e.file == n1 {
			t.Fatal("a file another user owns was read back")
		}
	}
}
