package proxy

import "fmt"

// The relay's byte budgets, as one table: a row a budget, saying its share of what the process
// is allowed (Options.MemoryLimit), what it counts, and what the relay does when it is full. The
// Server's budgets are made of it (newBudgets), each from its row, and the rows add up to the
// total: newBudgets refuses a table whose shares do not, or a budget without a row.
//
// The numbers. A relay process is allowed 512 MB at its peak (the target of `bench proxy`,
// issue 49): 488 MiB. The app's soft memory limit (app.DefaultMemoryLimit, 96 MiB) is soft: it
// is where the runtime starts collecting as it goes, so that past it the relay's memory is what
// is alive, not twice that; what is alive is the relay's own working set (some 40 MB settled:
// streams, buffers, tables) and what clients make it hold, which these budgets bound. They take
// the rest: 448 MiB, each the least that still serves the largest request (bodies and frames go
// to 64 MiB, a conversation to 64 MiB):
//
//   - request memory, 224 MiB: one large request may hold seven eighths of it, 196 MiB, which
//     holds a 60 MiB conversation replayed and its translation for a Chat account (180 MiB,
//     made once for every request that replays it) with room for the requests beside it: the
//     replay asks its whole share at once, and less room would leave it waiting behind them
//     (bench's replay of 62.9 MB). The eighth left, 28 MiB, is for small requests, which never
//     wait behind large ones.
//   - socket reads, 128 MiB: the least that reads the largest frame. A frame's buffers double,
//     and each one it outgrew counts until it is answered, so a 60 MiB frame counts 127 MiB.
//   - conversations, 64 MiB: one conversation's own bound (maxConversationBytes), so that the
//     largest a connection or a served response may keep is kept (bench's 62.9 MB replay), the
//     least recently used others giving way.
//   - compactions, 32 MiB, compressed (zstd makes a request a fifth to a tenth of its size): one
//     kept request may take an eighth, 4 MiB, a 20 to 40 MiB request. With Options.CompactionDir
//     (the app sets it) they are files, and only the accounts' re-made items stay in memory.

// DefaultMemoryLimit is the default of Options.MemoryLimit: what the relay's byte budgets hold
// at most, all together.
const DefaultMemoryLimit = 448 << 20

// budgetID names a budget of the table.
type budgetID int

const (
	budgetRequests budgetID = iota
	budgetConversations
	budgetSocketReads
	budgetCompactions
	budgetCount
)

// budgetRow is one budget of the relay.
type budgetRow struct {
	id   budgetID
	name string
	// share is its bound when the total is DefaultMemoryLimit; with another total, its part of
	// that.
	share int64
	// counts is what it counts; full what the relay does when it is full.
	counts, full string
	// knob is the option that sets its bound instead (zero: its share).
	knob func(*Options) int64
}

// budgetTable is every byte budget of the relay.
var budgetTable = []budgetRow{
	{id: budgetRequests, name: "request memory", share: 224 << 20,
		counts: "the bytes requests in flight hold whole: bodies as they arrive, conversations replayed and their translations, the kept requests compactions are re-made from, answers read whole (memory.go)",
		full:   "a request waits for room at most 30 s, then gets 503 relay_busy with a Retry-After; an eighth is kept for requests holding at most 1 MiB",
		knob:   func(o *Options) int64 { return o.MemoryBudget }},
	{id: budgetConversations, name: "conversations", share: 64 << 20,
		counts: "the histories WebSocket connections keep between turns, and the conversations of the responses served over HTTP (conversation.go, served.go), one at most 64 MiB",
		full:   "the least recently used is forgotten: its next turn gets previous_response_not_found",
		knob:   func(o *Options) int64 { return o.ConversationBudget }},
	{id: budgetSocketReads, name: "socket reads", share: 128 << 20,
		counts: "the client frames being read or waiting to be answered, every buffer they outgrew, and what large turns copy of them (socket.go)",
		full:   "a frame that would pass it closes its socket (1013 try again later; 1009 when it does not fit alone); a large turn gets server_busy, one is always served",
		knob:   func(o *Options) int64 { return o.SocketReadBudget }},
	{id: budgetCompactions, name: "compactions", share: 32 << 20,
		counts: "the requests that produced compactions, compressed, kept to re-make them on another account, and the accounts' re-made items (compactstore.go)",
		full:   "the least recently used is forgotten, its file removed; a conversation keeps its last two; a request over an eighth is not kept",
		knob:   func(o *Options) int64 { return o.CompactionBudget }},
}

// budgets are a Server's bounds, made of the table.
type budgets struct {
	total int64 // Options.MemoryLimit
	bound [budgetCount]int64
	set   [budgetCount]bool // a row gave it
}

// newBudgets makes the bounds of the table for opt: each row's share of opt.MemoryLimit
// (DefaultMemoryLimit when unset; request memory takes what rounding leaves, so that they add
// up to it), or what its option says. It panics on a table that does not add up to
// DefaultMemoryLimit, or that leaves a budget without a row or gives one two.
func newBudgets(opt Options) budgets {
	b := budgets{total: opt.MemoryLimit}
	if b.total <= 0 {
		b.total = DefaultMemoryLimit
	}
	var sum, given int64
	for _, r := range budgetTable {
		if r.id < 0 || r.id >= budgetCount || b.set[r.id] || r.share <= 0 || r.name == "" || r.knob == nil {
			panic(fmt.Sprintf("proxy: budget row %d (%q) is not a budget of its own", r.id, r.name))
		}
		b.set[r.id] = true
		sum += r.share
		b.bound[r.id] = max(1, int64(float64(b.total)*float64(r.share)/DefaultMemoryLimit))
		given += b.bound[r.id]
	}
	if sum != DefaultMemoryLimit {
		panic(fmt.Sprintf("proxy: the budgets' shares add up to %d bytes, not DefaultMemoryLimit (%d)", sum, DefaultMemoryLimit))
	}
	for id := range budgetCount {
		b.of(id) // a budget without a row
	}
	b.bound[budgetRequests] = max(1, b.bound[budgetRequests]+b.total-given)
	for _, r := range budgetTable {
		if v := r.knob(&opt); v > 0 {
			b.bound[r.id] = v
		}
	}
	return b
}

// of is budget id's bound; a budget the table has no row of panics, when the Server is built.
func (b budgets) of(id budgetID) int64 {
	if id < 0 || id >= budgetCount || !b.set[id] {
		panic(fmt.Sprintf("proxy: budget %d has no row in budgetTable", id))
	}
	return b.bound[id]
}

// defaultBudget is the bound of budget id under the default total.
func defaultBudget(id budgetID) int64 { return newBudgets(Options{}).of(id) }
