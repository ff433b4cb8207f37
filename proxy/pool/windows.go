package pool

import (
	"strings"
	"time"
)

// Windows: what an account's usage reading says it has left, and when that changes. Routing
// reads them to spend quota as a careful person would (reset-first, the reserve), and to keep
// a request off an account whose bucket for its model is spent before trying it.

// left is what a window has left at now, in percent: all of it once its reset has passed.
func left(used float64, resets time.Time, now time.Time) float64 {
	if !resets.IsZero() && !resets.After(now) {
		return 100
	}
	return max(0, 100-used)
}

// Binding is the window of a reading that stops an account first: the one with the least left
// (the five hours or the week), what it has left, and when it resets (zero: unknown).
type Binding struct {
	Left   float64
	Resets time.Time
}

// Binding is q's binding window at now; ok is false for a reading without windows.
func (q *Quota) Binding(now time.Time) (b Binding, ok bool) {
	if q == nil {
		return b, false
	}
	b.Left = 101
	if q.HasPrimary() {
		if l := left(q.PrimaryUsedPercent, q.PrimaryResetsAt, now); l < b.Left {
			b = Binding{Left: l, Resets: resetAfter(q.PrimaryResetsAt, now)}
		}
	}
	if q.HasSecondary() {
		if l := left(q.SecondaryUsedPercent, q.SecondaryResetsAt, now); l < b.Left {
			b = Binding{Left: l, Resets: resetAfter(q.SecondaryResetsAt, now)}
		}
	}
	return b, b.Left <= 100
}

// resetAfter is t when it is still to come, else zero (the window reset since it was read).
func resetAfter(t, now time.Time) time.Time {
	if t.After(now) {
		return t
	}
	return time.Time{}
}

// spentBucket is when the bucket feature's spent window (of q) resets, when one is spent at
// now; zero otherwise.
func (q *Quota) spentBucket(feature string, now time.Time) time.Time {
	a := q.Bucket(feature)
	if a == nil {
		return time.Time{}
	}
	var until time.Time
	if left(a.PrimaryUsedPercent, a.PrimaryResetsAt, now) <= 0 {
		until = a.PrimaryResetsAt
	}
	if left(a.SecondaryUsedPercent, a.SecondaryResetsAt, now) <= 0 && a.SecondaryResetsAt.After(until) {
		until = a.SecondaryResetsAt
	}
	return until
}

// Bucket is the limit of q that bucket names (its metered feature, or its limit_name as a
// model's name), nil when q lists none.
func (q *Quota) Bucket(bucket string) *AdditionalQuota {
	if q == nil || bucket == "" {
		return nil
	}
	for i := range q.Additional {
		if a := &q.Additional[i]; a.Feature == bucket || bucketOfName(a.Name) == bucket {
			return a
		}
	}
	return nil
}

// bucketOfName is the model a bucket's limit_name names, as the catalog spells models:
// "GPT-5.3-Codex-Spark" is gpt-5.3-codex-spark.
func bucketOfName(name string) string {
	return strings.ToLower(strings.Join(strings.Fields(name), "-"))
}

// buckets maps models to the bucket (a metered feature: codex_bengalfox) that meters them on
// the accounts, learned from the limits that named one and from the readings' limit names.
type buckets struct {
	byModel map[string]string
}

// bucketOf is the bucket that meters model on m ("": the account's own limit).
func (m *Member) bucketOf(model string) string {
	if model == "" || m.pool == nil {
		return ""
	}
	m.pool.bmu.RLock()
	b := m.pool.buckets.byModel[model]
	m.pool.bmu.RUnlock()
	if b != "" {
		return b
	}
	if m.quota != nil {
		for _, a := range m.quota.Additional {
			if bucketOfName(a.Name) == model {
				return a.Feature
			}
		}
	}
	return ""
}

// learnBucket notes that bucket meters model.
func (p *Pool) learnBucket(model, bucket string) {
	if model == "" || bucket == "" {
		return
	}
	p.bmu.Lock()
	defer p.bmu.Unlock()
	if p.buckets.byModel == nil {
		p.buckets.byModel = map[string]string{}
	}
	if len(p.buckets.byModel) < maxBucketModels {
		p.buckets.byModel[model] = bucket
	}
}

// maxBucketModels bounds the models the pool remembers the bucket of.
const maxBucketModels = 256

// ActiveLimit is the limit an answer's headers say is active (x-codex-active-limit), "" for
// none.
func ActiveLimit(h interface{ Get(string) string }) string {
	return strings.TrimSpace(h.Get("X-Codex-Active-Limit"))
}

// mainLimit is the name the backend gives an account's own limit in x-codex-active-limit.
const mainLimit = "codex"

// isBucket reports whether limit names a bucket, not the account's own limit: a metered
// feature m's reading lists, or one the pool met on another account. A limit the relay cannot
// tell (no reading lists it) rests the whole account, as it always did.
func (m *Member) isBucket(limit string) bool {
	if limit == "" || strings.EqualFold(limit, mainLimit) {
		return false
	}
	if m.Quota().Bucket(limit) != nil {
		return true
	}
	if m.pool == nil {
		return false
	}
	m.pool.bmu.RLock()
	defer m.pool.bmu.RUnlock()
	for _, b := range m.pool.buckets.byModel {
		if b == limit {
			return true
		}
	}
	return false
}

// bucketReset is when bucket's window on m resets, as m's reading says (the later of a spent
// window's, else the soonest to come); zero when it does not say.
func (m *Member) bucketReset(bucket string, now time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.quota.spentBucket(bucket, now); !t.IsZero() {
		return t
	}
	if a := m.quota.Bucket(bucket); a != nil {
		return minFuture(now, a.PrimaryResetsAt, a.SecondaryResetsAt)
	}
	return time.Time{}
}

// minFuture is the soonest of ts still to come at now (zero: none).
func minFuture(now time.Time, ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(now) && (out.IsZero() || t.Before(out)) {
			out = t
		}
	}
	return out
}
