// Package pool is Codex Relay's pool of upstream accounts: the accounts, their runtime health
// (rests by scope, sign-in marks, the breaker), their order and a session's affinity, their
// usage readings, the judge of what an upstream says, and the one way to call an account.
// It imports nothing of package proxy: proxy routes requests, and asks the pool which
// accounts may serve, in what order, and tells it what each call met.
//
// Only this package writes an account's state: Member's methods read it (State, Usable,
// Snapshot), the pool's methods write it (Rest, Call, Fail, Served, SignedIn, WindowsReset,
// SetQuota). The judge (judge.go) is pure: time and the window's reset are passed in, and
// Pool.Rest is the one writer of what a judgment rests.
//
// The files:
//
//	account.go    the accounts as the embedder gives them, and their credentials
//	member.go     an account with its runtime state: its readers, its writers, the breaker
//	pool.go       the list, the strategies' order, affinity, and why none can serve (Dry)
//	judge.go      what an upstream said, judged once: class, scope, until when; Rest
//	errorbody.go  an upstream's error object, in its several shapes, read leniently
//	quota.go      usage readings (/wham/usage) and what the order and the judge read of them
//	windows.go    what a reading has left: the binding window, the reserve, the buckets that meter models
//	call.go       Call: credential, one renewal on a refusal, judgment, rest
//	doc.go        this index (proxy/doc_test.go holds it to the folder)
//
// Where things go: a new strategy is a constant in pool.go, its name in Strategies and its key
// in order; a new scope of rest is a Scope, the rule in judge.go (judge, or Pool.Judge when it
// needs the account) and its case in Rest; a new side call is a Send given to Call (model "").
package pool
