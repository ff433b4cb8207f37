package proxy

import (
	"bytes"
	"container/list"
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
// re-make them from (compaction.go), in memory or on disk, bounded.

// DefaultCompactionBudget bounds the compressed requests the relay keeps to re-make
// compactions, all conversations together.
const DefaultCompactionBudget = 64 << 20

// keepPerConversation is how many compactions of one conversation the relay keeps the request
// of: the latest, and the one whose item the latest's input holds.
const keepPerConversation = 2

// remakeDepth bounds how deep a re-making follows compactions inside compactions.
const remakeDepth = keepPerConversation

// cannotRetry is how long the relay waits before asking again an account that could not
// compact a kept request (it answered the request as the client's mistake).
const cannotRetry = 10 * time.Minute

// compactionStore keeps the requests that produced compactions, by the seal table's digest of
// the compaction item's sealed value.
type compactionStore struct {
	dir      string    // where the kept requests are files ("": in memory)
	opened   sync.Once // the folder was read back (open)
	mu       sync.Mutex
	entries  map[uint64]*compacted
	sessions map[string][]uint64 // a conversation's kept compactions, the latest first
	lru      list.List           // of *compacted, the most recently used first
	size     int64               // compressed bytes kept
	budget   int64
	enc      *zstd.Encoder
	dec      *zstd.Decoder
}

// compacted is one kept compaction: the conversation it belongs to, the account that sealed it,
// the request that produced it (the HTTP form, compressed) and what each other account made of
// that request.
type compacted struct {
	digest  uint64
	session string
	sealer  string
	body    []byte                      // the compressed request, in memory (nil: in file)
	file    string                      // its file ("": in memory)
	size    int64                       // the compressed request's bytes
	remade  map[string]remadeCompaction // by account key
	el      *list.Element
}

// remadeCompaction is an account's own compaction of a kept request: its compaction item as
// the account sent it, or, when it could not make one, until when not to ask it again.
type remadeCompaction struct {
	item    []byte
	retryAt time.Time
}

func newCompactionStore(budget int64) *compactionStore {
	if budget <= 0 {
		budget = DefaultCompactionBudget
	}
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(DefaultMaxBody)+1))
	return &compactionStore{entries: map[uint64]*compacted{}, sessions: map[string][]uint64{}, budget: budget, enc: enc, dec: dec}
}

// keep records that sealer made the compaction whose sealed value (raw JSON) has digest d, in
// the conversation session, from the request body. A request too large for an eighth of the
// budget is not kept (its compaction can then only be left out).
func (cs *compactionStore) keep(d uint64, session, sealer string, value, body []byte) {
	cs.mu.Lock()
	e := cs.entries[d]
	if e != nil && e.sealer == sealer {
		cs.lru.MoveToFront(e.el) // kept already: a stream names its items twice (done, completed)
	}
	cs.mu.Unlock()
	if e != nil && e.sealer == sealer {
		return
	}
	z := cs.enc.EncodeAll(body, make([]byte, 0, len(body)/4))
	if int64(len(z)) > cs.budget/8 {
		return
	}
	e = &compacted{digest: d, session: session, sealer: sealer, body: z, size: int64(len(z))}
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
// budget say to (cs.mu held).
func (cs *compactionStore) add(e *compacted) {
	d, session := e.digest, e.session
	if old := cs.entries[d]; old != nil {
		if old.file == e.file {
			old.file = "" // the new one was written over it
		}
		cs.drop(old)
	}
	e.el = cs.lru.PushFront(e)
	cs.entries[d] = e
	cs.size += e.size
	if session != "" {
		kept := append([]uint64{d}, cs.sessions[session]...)
		for _, old := range kept[min(len(kept), keepPerConversation):] {
			if o := cs.entries[old]; o != nil {
				cs.drop(o)
			}
		}
		cs.sessions[session] = kept[:min(len(kept), keepPerConversation)]
	}
	for cs.size > cs.budget {
		cs.drop(cs.lru.Back().Value.(*compacted))
	}
}

// drop forgets e (cs.mu held).
func (cs *compactionStore) drop(e *compacted) {
	cs.lru.Remove(e.el)
	delete(cs.entries, e.digest)
	cs.size -= e.size
	if e.file != "" {
		os.Remove(e.file)
	}
	for _, it := range e.remade {
		cs.size -= int64(len(it.item))
	}
	if ds, ok := cs.sessions[e.session]; ok {
		kept := ds[:0]
		for _, d := range ds {
			if d != e.digest {
				kept = append(kept, d)
			}
		}
		if len(kept) == 0 {
			delete(cs.sessions, e.session)
		} else {
			cs.sessions[e.session] = kept
		}
	}
}

// request is the kept request of the compaction with digest d, decompressed, and its sealer;
// ok is false when none is kept.
func (cs *compactionStore) request(d uint64) (body []byte, sealer string, ok bool) {
	cs.mu.Lock()
	e := cs.entries[d]
	if e == nil {
		cs.mu.Unlock()
		return nil, "", false
	}
	cs.lru.MoveToFront(e.el)
	z, file, sealer := e.body, e.file, e.sealer
	cs.mu.Unlock()
	if file != "" {
		var err error
		if _, z, err = readCompaction(file, true); err != nil {
			return nil, "", false
		}
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
		cs.lru.MoveToFront(e.el)
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
	cs.size += int64(len(item)) - int64(len(e.remade[account].item))
	e.remade[account] = remadeCompaction{item: item, retryAt: retryAt}
	for cs.size > cs.budget && cs.lru.Len() > 1 {
		cs.drop(cs.lru.Back().Value.(*compacted))
	}
}

// usage is the compressed bytes kept and the compactions they belong to.
func (cs *compactionStore) usage() (bytes int64, entries int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.size, len(cs.entries)
}

// A kept request's file: one line of JSON (compactionHeader), then the compressed request. Its
// name is a digest of the compaction's sealed value, stable across restarts (the seal table's
// digests are not).

type compactionHeader struct {
	Sealer  string          `json:"sealer"`
	Session string          `json:"session"`
	Value   json.RawMessage `json:"value"` // the compaction item's sealed value
	Made    time.Time       `json:"made"`
}

const compactionExt = ".compaction"

// maxCompactionHeader bounds a file's first line (a sealed value is a few kilobytes).
const maxCompactionHeader = 1 << 20

// write writes e's file, atomically, under a name made of value, and records it in e, whose
// body then lives in the file alone.
func (cs *compactionStore) write(e *compacted, value []byte) error {
	sum := sha256.Sum256(value)
	head, _ := json.Marshal(compactionHeader{Sealer: e.sealer, Session: e.session, Value: value, Made: time.Now().UTC()})
	f, err := os.CreateTemp(cs.dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(append(append(head, '\n'), e.body...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	name := filepath.Join(cs.dir, hex.EncodeToString(sum[:16])+compactionExt)
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
// request. A file that is not a regular one of the relay's making is refused.
func readCompaction(name string, body bool) (compactionHeader, []byte, error) {
	var h compactionHeader
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return h, nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return h, nil, errors.New("not a regular file")
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
	if err := json.Unmarshal(first[:i], &h); err != nil || h.Sealer == "" || payload.KindOf(h.Value) != payload.KindString {
		return h, nil, errors.New("not a kept compaction")
	}
	if !body {
		return h, nil, nil
	}
	rest, err := io.ReadAll(io.LimitReader(f, DefaultMaxBody))
	return h, append(first[i+1:], rest...), err
}

// open makes the store keep its requests in dir (made, mode 0700, if missing) and reads back
// what an earlier relay kept there, the most recent last, within the budget: each is told to
// learn (who sealed which value, in which conversation). Once; "" keeps them in memory.
func (cs *compactionStore) open(dir string, learn func(sealer, session string, value []byte) uint64) error {
	var err error
	cs.opened.Do(func() {
		if dir == "" {
			return
		}
		if err = os.MkdirAll(dir, 0o700); err != nil {
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
			if serr != nil || !st.Mode().IsRegular() {
				continue
			}
			h, _, rerr := readCompaction(n, false)
			if rerr != nil {
				os.Remove(n) // not one of ours, or cut short: of no use
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
			cs.add(&compacted{digest: d, session: k.h.Session, sealer: k.h.Sealer, file: k.name, size: k.size})
		}
	})
	return err
}
