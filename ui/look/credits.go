package look

import (
	"errors"
	"fmt"

	"github.com/codexrelay/codexrelay/proxy"
)

// A banked reset as both processes say it: which accounts offer a redemption (the tray menu
// and the accounts window's row menu), what a redemption did, and why one did not happen.

// CanRedeem says whether an account's menu offers a redemption.
func CanRedeem(a proxy.AccountStats) bool {
	return a.Kind == proxy.KindChatGPT && a.State != proxy.StateDisabled && a.ResetCredits != nil &&
		(a.ResetCredits.Available > 0 || a.ResetCredits.Pending)
}

// Redeemed tells what a redemption did (the tray's notification, the accounts window's note).
func Redeemed(r proxy.RedeemResult) string {
	how := "Redeemed"
	if r.Auto {
		how = "Every account was resting: the relay redeemed"
	}
	body := fmt.Sprintf("%s a banked reset of %s: %s reset; it serves again.", how, r.Account, Plural(int64(r.WindowsReset), "window"))
	if r.Remaining != nil {
		body += " " + Plural(int64(r.Remaining.Available), "banked reset") + " left."
	}
	return body
}

// RedeemFailure says why a redemption asked for in the UI did not happen, in the user's words.
func RedeemFailure(name string, err error) string {
	switch {
	case errors.Is(err, proxy.ErrNoResetCredit):
		return fmt.Sprintf("“%s” holds no banked reset now.", name)
	case errors.Is(err, proxy.ErrRedeemPending):
		return fmt.Sprintf("No answer came for “%s”'s banked reset; trying again reuses the same request, so at most one banked reset is spent.", name)
	}
	return err.Error()
}
