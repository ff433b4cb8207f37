package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// The compaction store: the requests that produced compactions, kept for another account to
// re-make them from (compaction.go), in memory or on disk, bounded (compactions in budgets.go's
// table).

// keepPerConversation is how many compactions of one conversation the relay keeps the request
// of: the latest, and the one whose item the latest's input holds. A conversation is told by
// that chain, not by its prompt_cache_key: a second client that reuses the key cannot evict
// another's kept requests (only the budget's least recently used can go).
const keepPerConversation = 2

// remakeDepth bounds how deep a re-making follows compactions inside compactions.
const remakeDepth = keepPerConversation

// cannotRetry is how long the relay waits before asking again an account that could not
// compact a kept request (it answered the request as the client's mistake).
const cannotRetry = 10 * time.Minute

// compactionStore keeps the requests that produced compactions, by the seal table's digest of
// the compaction item's sealed value.
type compactionStore struct {
	dir     string    // where the kept requests are files ("": in memory)
	opened  sync.Once // the folder was read back (open)
	mu      sync.Mutex
	entries map[uint64]*compacted
	byName  map[string]*compacted // by compactionName of the sealed value
	// lru orders the kept compactions, the most recently used first, and counts their bytes
	// (the compressed requests and the re-made items) against the budget.
	lru    lru[*compacted]
	budget int64
	enc    *zstd.Encoder
	dec    *zstd.Decoder
}

// compacted is one kept compaction: the conversation it belongs to, the account that sealed it,
// the request that produced it (the HTTP form, compressed) and what each other account made of
// that request.
type compacted struct {
	digest  uint64
	name    string   // compactionName of its sealed value: its file's name, stable across restarts
	parents []string // the names of the compactions its request's input holds
	session string
	sealer  string
	body    []byte                      // the compressed request, in memory (nil: in file)
	file    string                      // its file ("": in memory)
	size    int64                       // the compressed request's bytes
	remade  map[string]remadeCompaction // by account key
	el      *lruEntry[*compacted]       // its place in the store's LRU, holding size and the remade items
}

// remadeCompaction is an account's own compaction of a kept request: its compaction item as
// the account sent it, or, when it could not make one, until when not to ask it again.
type remadeCompaction struct {
	item    []byte
	retryAt time.Time
}

func newCompactionStore(budget int64) *compactionStore {
	if budget <= 0 {
		budget = defaultBudget(budgetCompactions)
	}
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(DefaultMaxBody)+1))
	return &compactionStore{entries: map[uint64]*compacted{}, byName: map[string]*compacted{}, lru: lru[*compacted]{bound: budget},
		budget: budget, enc: enc, dec: dec}
}

// compactionName names a compaction by a digest of its sealed value (raw JSON): its file's name
// without the extension. The seal table's digests are not stable across restarts; this is.
func compactionName(value []byte) string {
	sum := sha256.Sum256(value)
	return hex.EncodeToString(sum[:16])
}

// keep records that sealer made the compaction whose sealed value (raw JSON) has digest d, in
// the conversation session, from the request body, whose input holds the compactions whose
// values are parents. A request too large for an eighth of the budget is not kept (its
// compaction can then only be left out).
func (cs *compactionStore) keep(d uint64, session, sealer string, value, body []byte, parents [][]byte) {
	cs.mu.Lock()
	e := cs.entries[d]
	if e != nil && e.sealer == sealer {
		cs.lru.touch(e.el) // kept already: a stream names its items twice (done, completed)
	}
	cs.mu.Unlock()
	if e != nil && e.sealer == sealer {
		return
	}
	z := cs.enc.EncodeAll(body, make([]byte, 0, len(body)/4))
	if int64(len(z)+len(value))+compactionHeaderRoom > cs.budget/8 {
		return // its file, header and all, must be one that open and request read back
	}
	e = &compacted{digest: d, name: compactionName(value), session: session, sealer: sealer, body: z, size: int64(len(z))}
	for _, p := range parents {
		e.parents = append(e.parents, compactionName(p))
	}
	if cs.dir != "" {
		if err := cs.write(e, value); err != nil {
			return // not kept: the compaction can then only be left out
		}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.add(e)
}

// add puts e in the store as its latest, forgetting what the conversation's bound and the
// budget say to (cs.mu held): the compactions its parents' requests held are the conversation's
// third from the latest.
func (cs *compactionStore) add(e *compacted) {
	if old := cs.entries[e.digest]; old != nil {
		if old.file == e.file {
			old.file = "" // the new one was written over it
		}
		cs.drop(old)
	}
	if old := cs.byName[e.name]; old != nil {
		if old.file == e.file {
			old.file = ""
		}
		cs.drop(old)
	}
	e.el = cs.lru.push(e, e.size)
	cs.entries[e.digest] = e
	cs.byName[e.name] = e
	for _, p := range e.parents {
		if pe := cs.byName[p]; pe != nil {
			for _, gp := range pe.parents {
				if g := cs.byName[gp]; g != nil && g != e && g != pe {
					cs.drop(g)
				}
			}
		}
	}
	cs.lru.evict(0, nil, cs.dropEntry)
}

// drop forgets e, its request and its re-made items (cs.mu held).
func (cs *compactionStore) drop(e *compacted) {
	cs.lru.remove(e.el)
	delete(cs.entries, e.digest)
	if e.file != "" {
		os.Remove(e.file)
	}
	if cs.byName[e.name] == e {
		delete(cs.byName, e.name)
	}
}

// dropEntry is drop for the LRU's evict.
func (cs *compactionStore) dropEntry(el *lruEntry[*compacted]) { cs.drop(el.Value) }

// request is the kept request of the compaction with digest d, decompressed, and its sealer;
// ok is false when none is kept.
func (cs *compactionStore) request(d uint64) (body []byte, sealer string, ok bool) {
	cs.mu.Lock()
	e := cs.entries[d]
	if e == nil {
		cs.mu.Unlock()
		return nil, "", false
	}
	cs.lru.touch(e.el)
	z, file, sealer, name, session := e.body, e.file, e.sealer, e.name, e.session
	cs.mu.Unlock()
	if file != "" {
		// The file is checked against its entry: one swapped while the relay runs is not sent
		// upstream as the conversation's history.
		h, fz, err := readCompaction(file, true, cs.budget/8)
		if err != nil || h.Sealer != sealer || h.Session != session || compactionName(h.Value) != name {
			return nil, "", false
		}
		z = fz
	}
	body, err := cs.dec.DecodeAll(z, nil)
	return body, sealer, err == nil
}

// remadeFor is account's own compaction of the kept compaction d: its item (nil: none), and
// whether the relay should ask the account for one now (a request is kept, and the account
// was not found unable lately).
func (cs *compactionStore) remadeFor(d uint64, account string, now time.Time) (item []byte, ask bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	e := cs.entries[d]
	if e == nil {
		return nil, false
	}
	r, ok := e.remade[account]
	if ok && r.item != nil {
		cs.lru.touch(e.el)
		return r.item, false
	}
	return nil, !ok || now.After(r.retryAt)
}

// setRemade records account's compaction item of the kept compaction d, or, with a nil item,
// that the account could not make one (not asked again before retryAt).
func (cs *compactionStore) setRemade(d uint64, account string, item []byte, retryAt time.Time) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	e := cs.entries[d]
	if e == nil {
		return
	}
	if e.remade == nil {
		e.remade = map[string]remadeCompaction{}
	}
	cs.lru.grow(e.el, int64(len(item))-int64(len(e.remade[account].item)))
	e.remade[account] = remadeCompaction{item: item, retryAt: retryAt}
	cs.lru.evict(1, nil, cs.dropEntry) // one stays, however large
}

// usage is the compressed bytes kept and the compactions they belong to.
func (cs *compactionStore) usage() (bytes int64, entries int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.lru.bytes(), len(cs.entries)
}

// A kept request's file: one line of JSON (compactionHeader), then the compressed request. Its
// name is a digest of the compaction's sealed value, stable across restarts (the seal table's
// digests are not).

type compactionHeader struct {
	Sealer  string          `json:"sealer"`
	Session string          `json:"session"`
	Value   json.RawMessage `json:"value"` // the compaction item's sealed value
	Made    time.Time       `json:"made"`
	Parents []string        `json:"parents,omitempty"` // the names of the compactions its input holds
}

const compactionExt = ".compaction"

// compactionHeaderRoom is what a file's header takes besides its sealed value (sealer, session,
// time, the parents' names), at most: keep bounds a file by it.
const compactionHeaderRoom = 4 << 10

// maxCompactionHeader bounds a file's first line (a sealed value is a few kilobytes).
const maxCompactionHeader = 1 << 20

// write writes e's file, atomically, under a name made of value, and records it in e, whose
// body then lives in the file alone.
func (cs *compactionStore) write(e *compacted, value []byte) error {
	head, _ := json.Marshal(compactionHeader{Sealer: e.sealer, Session: e.session, Value: value, Made: time.Now().UTC(), Parents: e.parents})
	f, err := os.CreateTemp(cs.dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(append(append(head, '\n'), e.body...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	name := filepath.Join(cs.dir, e.name+compactionExt)
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	e.file, e.body = name, nil
	return nil
}

// readCompaction reads a kept request's file: its header, and with body its compressed
// request. A file that is not a regular one of the relay's making, one another user owns, or
// one larger than limit is refused.
func readCompaction(name string, body bool, limit int64) (compactionHeader, []byte, error) {
	var h compactionHeader
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return h, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil || !st.Mode().IsRegular():
		return h, nil, errors.New("not a regular file")
	case !ownedByUser(st):
		return h, nil, errForeignOwner
	case st.Size() > limit:
		return h, nil, errors.New("larger than a kept compaction may be")
	}
	first := make([]byte, 64<<10)
	n, err := io.ReadFull(f, first)
	first = first[:n]
	i := bytes.IndexByte(first, '\n')
	for i < 0 && err == nil && len(first) < maxCompactionHeader { // a long sealed value
		more := make([]byte, len(first))
		n, err = io.ReadFull(f, more)
		first = append(first, more[:n]...)
		i = bytes.IndexByte(first, '\n')
	}
	if i < 0 {
		return h, nil, errors.New("not a kept compaction")
	}
	if err := json.Unmarshal(first[:i], &h); err != nil || h.Sealer == "" || payload.KindOf(h.Value) != payload.KindString ||
		filepath.Base(name) != compactionName(h.Value)+compactionExt {
		return h, nil, errors.New("not a kept compaction")
	}
	if !body {
		return h, nil, nil
	}
	rest, err := io.ReadAll(io.LimitReader(f, limit))
	return h, append(first[i+1:], rest...), err
}

// errForeignOwner says that a file or folder of the compactions belongs to another user.
var errForeignOwner = errors.New("owned by another user")

// open makes the store keep its requests in dir and reads back what an earlier relay kept
// there, the most recent last, within the budget: each is told to learn (who sealed which
// value, in which conversation). Once; "" keeps them in memory.
//
// The folder is the user's (ownedFolder): made 0700, or brought back to it; one another user
// owns, or a link, is refused. Of its files, one another user owns is skipped, one over the
// bound of an entry is skipped before it is counted (a planted 20 GB sparse file would
// otherwise push every kept compaction out of the budget), and one that is no kept compaction
// of ours (a header that does not match its name) is removed.
func (cs *compactionStore) open(dir string, learn func(sealer, session string, value []byte) uint64) error {
	var err error
	cs.opened.Do(func() {
		if dir == "" {
			return
		}
		if err = ownedFolder(dir); err != nil {
			return
		}
		var names []string
		if names, err = filepath.Glob(filepath.Join(dir, "*"+compactionExt)); err != nil {
			return
		}
		type kept struct {
			name string
			h    compactionHeader
			size int64
		}
		var all []kept
		for _, n := range names {
			st, serr := os.Lstat(n)
			if serr != nil || !st.Mode().IsRegular() || !ownedByUser(st) || st.Size() > cs.budget/8 {
				continue
			}
			h, _, rerr := readCompaction(n, false, cs.budget/8)
			if rerr != nil {
				if !errors.Is(rerr, errForeignOwner) {
					os.Remove(n) // not one of ours, or cut short: of no use
				}
				continue
			}
			all = append(all, kept{n, h, st.Size()})
		}
		slices.SortFunc(all, func(a, b kept) int { return a.h.Made.Compare(b.h.Made) })
		cs.mu.Lock()
		defer cs.mu.Unlock()
		cs.dir = dir
		for _, k := range all {
			d := learn(k.h.Sealer, k.h.Session, k.h.Value)
			cs.add(&compacted{digest: d, name: compactionName(k.h.Value), parents: k.h.Parents, session: k.h.Session,
				sealer: k.h.Sealer, file: k.name, size: k.size})
		}
	})
	return err
}

// ownedFolder makes dir (mode 0700) if it is missing, and checks that it is a folder of the
// user's that only the user can open, bringing a wider mode back to 0700.
func ownedFolder(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	st, err := os.Lstat(dir)
	switch {
	case err != nil:
		return err
	case !st.IsDir():
		return errors.New(dir + " is not a folder")
	case !ownedByUser(st):
		return errors.New(dir + " is " + errForeignOwner.Error())
	case st.Mode().Perm()&0o077 != 0:
		return os.Chmod(dir, 0o700)
	}
	return nil
}
