package proxy

import (
	"bytes"
	"hash/maphash"
	"runtime"
	"strconv"
	"sync"

	"github.com/codexrelay/codexrelay/proxy/payload"
)

// The seal table: which account sealed each sealed value the relay relayed, and which accounts
// refused a value nobody is known to have sealed (what the relay does with it: sealed.go).

// defaultSealedItems bounds how many sealed values the relay remembers (about 40 bytes each);
// past it the oldest are forgotten, and a value forgotten that goes to a foreign account costs
// one strip-and-retry.
const defaultSealedItems = 1 << 18

// sealTable remembers which account sealed each value the relay relayed, by a 64-bit digest
// of it, and which accounts refused a value nobody is known to have sealed. Bounded: a ring of
// digests in arrival order evicts the oldest.
type sealTable struct {
	seed maphash.Seed
	mu   sync.RWMutex
	own  map[uint64]sealEntry
	ring []uint64 // digests in arrival order (len = capacity once full)
	next int      // the ring's oldest entry once full
	cap  int
	// owners are the accounts' keys by index; count how many entries each owns, and refusals
	// how many each refused.
	owners   []string
	ids      map[string]uint32
	count    []int
	refusals []int
	// sessions has, for each conversation (the request's session) the relay saw sealed values
	// in, a bit per owner index that sealed some and a bit per index that refused some (bit 63
	// for indexes past it); sessRing orders them for eviction, at the table's capacity / 64.
	sessions map[string]sessionSeals
	sessRing []string
	sessNext int
}

// sealEntry is what the table knows of one sealed value: who sealed it (owner is the index
// plus one; 0: nobody known) and, a bit per index (bit 31 for indexes past it), who refused it.
type sealEntry struct {
	owner   uint32
	refused uint32
}

func refusalBit(id uint32) uint32 { return 1 << min(id, 31) }

type sessionSeals struct{ sealed, refused uint64 }

func newSealTable(capacity int) *sealTable {
	if capacity <= 0 {
		capacity = defaultSealedItems
	}
	return &sealTable{seed: maphash.MakeSeed(), own: map[uint64]sealEntry{}, cap: capacity, ids: map[string]uint32{},
		sessions: map[string]sessionSeals{}}
}

// digest is the digest of a sealed value (raw JSON, quotes included) by what it says, not how
// it was written: an upstream that writes "\/" and a client that writes "/" seal the same.
func (t *sealTable) digest(content []byte) uint64 {
	if bytes.IndexByte(content, '\\') >= 0 {
		if s, err := payload.DecodeString(content); err == nil {
			return maphash.String(t.seed, s)
		}
	}
	if len(content) >= 2 && content[0] == '"' {
		content = content[1 : len(content)-1]
	}
	return maphash.Bytes(t.seed, content)
}

// id is the index of account (t.mu held for writing).
func (t *sealTable) id(account string) uint32 {
	id, ok := t.ids[account]
	if !ok {
		id = uint32(len(t.owners))
		t.owners = append(t.owners, account)
		t.count = append(t.count, 0)
		t.refusals = append(t.refusals, 0)
		t.ids[account] = id
	}
	return id
}

// learn records that owner sealed content (the raw JSON string value) in the conversation
// session ("" when the request named none).
func (t *sealTable) learn(owner, session string, content []byte) {
	d := t.digest(content)
	if t.knows(d, owner, session) {
		return // each turn replays what the relay learned on the turns before
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	id := t.id(owner)
	if session != "" {
		t.noteSession(session, id, false)
	}
	e, known := t.own[d]
	if !known {
		t.push(d)
	}
	if e.owner != 0 {
		// Known: the latest word wins (an account that served it back owns it).
		t.count[e.owner-1]--
	}
	t.forgetRefusals(e)
	t.own[d] = sealEntry{owner: id + 1}
	t.count[id]++
}

// learnSealer is learn that gives back the value's digest (the compaction store's key).
func (t *sealTable) learnSealer(owner, session string, content []byte) uint64 {
	t.learn(owner, session, content)
	return t.digest(content)
}

// refuse records that account refused content, which nobody is known to have sealed, in the
// conversation session: from now on it is foreign to that account, and to that account only.
func (t *sealTable) refuse(account, session string, content []byte) {
	d := t.digest(content)
	t.mu.Lock()
	defer t.mu.Unlock()
	id := t.id(account)
	if session != "" {
		t.noteSession(session, id, true)
	}
	e, known := t.own[d]
	if !known {
		t.push(d)
	}
	if e.refused&refusalBit(id) == 0 {
		e.refused |= refusalBit(id)
		t.refusals[id]++
	}
	t.own[d] = e
}

// push adds digest d to the ring, evicting the oldest entry once full (t.mu held).
func (t *sealTable) push(d uint64) {
	if len(t.ring) < t.cap {
		t.ring = append(t.ring, d)
		return
	}
	old := t.ring[t.next]
	if e, ok := t.own[old]; ok {
		if e.owner != 0 {
			t.count[e.owner-1]--
		}
		t.forgetRefusals(e)
		delete(t.own, old)
	}
	t.ring[t.next] = d
	t.next = (t.next + 1) % t.cap
}

// forgetRefusals takes e's refusals off the accounts' counts (t.mu held).
func (t *sealTable) forgetRefusals(e sealEntry) {
	for id := range t.refusals {
		if e.refused&refusalBit(uint32(id)) != 0 && t.refusals[id] > 0 {
			t.refusals[id]--
		}
	}
}

// owner is the account that sealed content, if the relay knows.
func (t *sealTable) owner(content []byte) (string, bool) {
	d := t.digest(content)
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.own[d]
	if !ok || e.owner == 0 {
		return "", false
	}
	return t.owners[e.owner-1], true
}

// disown records that account, which sealed content, now refuses it (its backend's key changed,
// openai/codex#36704): the content is nobody's known seal any more, and refused by account.
// It reports whether account was the content's known sealer.
func (t *sealTable) disown(account, session string, content []byte) bool {
	d := t.digest(content)
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.own[d]
	id, known := t.ids[account]
	if !ok || !known || e.owner != id+1 {
		return false
	}
	t.count[id]--
	e.owner = 0
	if e.refused&refusalBit(id) == 0 {
		e.refused |= refusalBit(id)
		t.refusals[id]++
	}
	t.own[d] = e
	if session != "" {
		t.noteSession(session, id, true)
	}
	return true
}

// foreignTo reports whether content is foreign to account: sealed by another account, or
// refused by this one; known says whether the table knows anything of it for account.
func (t *sealTable) foreignTo(content []byte, account string) (foreign, known bool) {
	d := t.digest(content)
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.own[d]
	if !ok {
		return false, false
	}
	if e.owner != 0 {
		return t.owners[e.owner-1] != account, true
	}
	if id, ok := t.ids[account]; ok && e.refused&refusalBit(id) != 0 {
		return true, true
	}
	return false, false
}

// knows reports whether the table already says that owner sealed digest d in session.
func (t *sealTable) knows(d uint64, owner, session string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	e, ok := t.own[d]
	if !ok || e.owner == 0 || t.owners[e.owner-1] != owner {
		return false
	}
	return session == "" || t.sessions[session].sealed&ownerBit(e.owner-1) != 0
}

func ownerBit(id uint32) uint64 { return 1 << min(id, 63) }

// noteSession records that owner id sealed (or refused) values in session (t.mu held).
func (t *sealTable) noteSession(session string, id uint32, refused bool) {
	ss, ok := t.sessions[session]
	if !ok {
		if limit := max(t.cap/64, 16); len(t.sessRing) < limit {
			t.sessRing = append(t.sessRing, session)
		} else {
			delete(t.sessions, t.sessRing[t.sessNext])
			t.sessRing[t.sessNext] = session
			t.sessNext = (t.sessNext + 1) % limit
		}
	}
	if refused {
		ss.refused |= ownerBit(id)
	} else {
		ss.sealed |= ownerBit(id)
	}
	t.sessions[session] = ss
}

// foreignIn reports whether a request of the conversation session to owner may carry values
// foreign to it: whether another account sealed values of that conversation, or owner refused
// some. When none did (a conversation that never rotated, or one the relay does not know), the
// request has nothing to leave out and costs a look-up. A request that names no conversation
// asks whether the table knows any value foreign to owner.
func (t *sealTable) foreignIn(session, owner string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	id, known := t.ids[owner]
	if session == "" {
		for i, n := range t.count {
			if n > 0 && t.owners[i] != owner {
				return true
			}
		}
		return known && t.refusals[id] > 0
	}
	ss := t.sessions[session]
	if known && id < 63 {
		ss.sealed &^= ownerBit(id)
	}
	return ss.sealed != 0 || (known && ss.refused&ownerBit(id) != 0)
}

// size is how many values the table remembers.
func (t *sealTable) size() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.own)
}

// SealedItemBytes measures what remembering one sealed item costs: the heap a full table of
// the default size holds, per item (`bench proxy` prints it).
func SealedItemBytes() float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	t := newSealTable(defaultSealedItems)
	content := make([]byte, 0, 64)
	for i := range defaultSealedItems {
		content = strconv.AppendInt(append(content[:0], `"gAAAAB`...), int64(i), 10)
		t.learn("account", "", append(content, '"'))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(t)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(t.size())
}
