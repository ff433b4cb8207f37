package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/codexrelay/codexrelay/app/localapi"
	"github.com/codexrelay/codexrelay/proxy"
)

// Banked resets as the store knows them: the reset-credits setting, the redemptions whose
// answer never arrived (kept in the settings folder), asking the running relay to redeem, and
// when a redemption helps. A redemption itself runs in the process that serves (app/relay):
// its per-account lock and the intent it keeps until an answer live there.

// ResetCredits is the reset-credit policy the settings say.
func (a *App) ResetCredits() string { return cmpOr(a.Settings().ResetCredits, proxy.ResetCreditsAsk) }

// RedeemTimeout bounds a redemption asked for by hand, read-back included.
const RedeemTimeout = 90 * time.Second

// RedeemCredit asks the relay running for this settings folder to spend one of the named
// ChatGPT account's banked resets (a signed request, no key sent: see RelayClient) and returns
// what it answered. With no relay of this folder serving, it returns ErrNoRelay having sent
// nothing (app/relay's RedeemCredit then redeems in this process). The relay's error answers
// match the proxy's errors again (errors.Is: proxy.ErrNoSuchAccount, proxy.ErrNotChatGPT,
// proxy.ErrNoResetCredit, proxy.ErrRedeemPending).
func (a *App) RedeemCredit(name string) (proxy.RedeemResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), RedeemTimeout)
	defer cancel()
	rc, err := a.RunningRelay(0) // ctx bounds it
	if err != nil {
		return proxy.RedeemResult{}, err
	}
	if rc == nil {
		return proxy.RedeemResult{}, ErrNoRelay
	}
	res, err := rc.RedeemCredit(ctx, name)
	var dial *net.OpError
	var answer *localapi.Error
	switch {
	case err == nil, errors.As(err, &answer):
		return res, err
	case errors.As(err, &dial) && dial.Op == "dial":
		return res, ErrNoRelay // no connection, nothing sent: the relay stopped meanwhile
	case errors.Is(err, ErrNotTheRelay):
		return res, fmt.Errorf("%w; nothing was redeemed", err)
	}
	// The relay may have sent the consume before the line broke: redeeming here with a new id
	// could spend a second banked reset.
	return res, fmt.Errorf("the running relay did not answer (%v): %w", err, proxy.ErrRedeemPending)
}

// NotifyResetCredit is the notification kind of banked resets: a credit that expires within
// a day unused, the relay's question when every account rests (ask), a redemption's result.
const NotifyResetCredit = "reset_credit"

// pendingRedeemName is the file, in the settings folder, that keeps each account's redemption
// whose answer never arrived (proxy.PendingRedeem, by account ID), so that the next try, in
// this process or a later one, sends the same redeem_request_id. It holds no secret.
const pendingRedeemName = "redeem-pending.json"

// PendingRedeems are the redemptions kept in the settings folder whose answer never arrived,
// by account ID.
func (a *App) PendingRedeems() map[string]proxy.PendingRedeem {
	kept := map[string]proxy.PendingRedeem{}
	path := filepath.Join(a.opt.ConfigDir, pendingRedeemName)
	// A link planted there is neither read nor followed (KeepPendingRedeem replaces it).
	if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
		return kept
	}
	b, err := readRegularFile(path, 1<<20)
	if err == nil {
		json.Unmarshal(b, &kept)
	}
	return kept
}

// KeepPendingRedeem writes down the account's redemption whose answer never arrived (p), or
// clears it (p nil), in the settings folder.
func (a *App) KeepPendingRedeem(id string, p *proxy.PendingRedeem) error {
	a.pendingMu.Lock()
	defer a.pendingMu.Unlock()
	kept := a.PendingRedeems()
	if _, had := kept[id]; p == nil && !had {
		return nil
	}
	if p != nil {
		kept[id] = *p
	} else {
		delete(kept, id)
	}
	path := filepath.Join(a.opt.ConfigDir, pendingRedeemName)
	var err error
	if len(kept) == 0 {
		if err = os.Remove(path); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	} else {
		b, _ := json.MarshalIndent(kept, "", "  ")
		err = replaceFile(path, b, 0o600) // never through a link: a link there is replaced
	}
	return err
}

// RedeemWorthAt is the share of a window used from which a banked reset helps: below it, the
// account has most of its windows left, and a redemption (which also restarts the weekly window
// from that moment, openai/codex #42888) gives back little.
const RedeemWorthAt = 90.0

// RedeemHelps says whether spending a banked reset of the account whose state is st would
// help: it rests at its limit, or a window is at least RedeemWorthAt used. why says, when it
// would not, what the account has left.
func RedeemHelps(st proxy.AccountStats) (helps bool, why string) {
	q := st.Quota
	switch {
	case st.State == proxy.StateCooldown && st.CooldownReason == proxy.CooldownRateLimit:
		return true, ""
	case q == nil:
		return false, "its usage is not known (no quota read yet)"
	case q.PrimaryUsedPercent >= RedeemWorthAt || q.SecondaryUsedPercent >= RedeemWorthAt:
		return true, ""
	}
	return false, fmt.Sprintf("it has used %.0f%% of its five-hour window and %.0f%% of its weekly one", q.PrimaryUsedPercent, q.SecondaryUsedPercent)
}
