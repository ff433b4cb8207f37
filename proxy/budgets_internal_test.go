package proxy

import (
	"fmt"
	"strings"
	"testing"
)

// The budgets' table adds up to what the process is allowed: its shares to
// DefaultMemoryLimit, and the bounds a Server is built with to its Options.MemoryLimit, each
// budget of the Server from its row; an option that sets a budget sets that one alone.
func TestBudgetTableAddsUpToTheMemoryLimit(t *testing.T) {
	var shares int64
	for _, r := range budgetTable {
		shares += r.share
		if r.counts == "" || r.full == "" {
			t.Errorf("budget %q does not say what it counts and what happens when it is full", r.name)
		}
	}
	if shares != DefaultMemoryLimit || len(budgetTable) != int(budgetCount) {
		t.Fatalf("%d rows share %d bytes, want %d rows and %d", len(budgetTable), shares, budgetCount, DefaultMemoryLimit)
	}
	for _, limit := range []int64{0, 100 << 20, 1<<30 + 7} {
		s := New(Options{MemoryLimit: limit})
		want := limit
		if want == 0 {
			want = DefaultMemoryLimit
		}
		built := s.builtBudgets()
		var sum int64
		for _, r := range budgetTable {
			sum += built[r.id]
			if limit == 0 && built[r.id] != r.share {
				t.Errorf("%s: the Server built %d bytes, its row says %d", r.name, built[r.id], r.share)
			}
		}
		if sum != want {
			t.Errorf("MemoryLimit %d: the Server's budgets add up to %d (%v)", limit, sum, built)
		}
	}
	s := New(Options{ConversationBudget: 1 << 20})
	if got := s.builtBudgets(); got[budgetConversations] != 1<<20 || got[budgetRequests] != 224<<20 || got[budgetSocketReads] != 128<<20 {
		t.Fatalf("an option set a budget: %v", got)
	}
}

// builtBudgets are the bounds of the budgets s built, read from each budget itself.
func (s *Server) builtBudgets() [budgetCount]int64 {
	var b [budgetCount]int64
	b[budgetRequests] = s.mem.size
	b[budgetConversations] = s.convBudget().lru.bound
	b[budgetSocketReads] = s.opt.SocketReadBudget
	b[budgetCompactions] = s.compactions.lru.bound
	return b
}

// A table whose rows do not add up, or that leaves a budget without a row, is refused when a
// Server is built; so is a budget asked for that has no row.
func TestBudgetTableIsCheckedWhenBuilt(t *testing.T) {
	refused := func(what, says string, f func()) {
		t.Helper()
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), says) {
				t.Errorf("%s: %v, want a refusal saying %q", what, p, says)
			}
		}()
		f()
	}
	saved := budgetTable
	defer func() { budgetTable = saved }()
	budgetTable = append([]budgetRow(nil), saved...)
	budgetTable[0].share++
	refused("shares over the total", "add up to", func() { New(Options{}) })
	budgetTable = append([]budgetRow(nil), saved[1:]...)
	budgetTable[0].share += saved[0].share // the shares still add up
	refused("a budget without a row", "has no row", func() { New(Options{}) })
	budgetTable = append(append([]budgetRow(nil), saved...), saved[0])
	refused("a budget with two rows", "not a budget of its own", func() { New(Options{}) })
	budgetTable = saved
	refused("a budget the table does not know", "has no row", func() { newBudgets(Options{}).of(budgetCount) })
}
