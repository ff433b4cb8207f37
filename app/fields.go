package app

import (
	"errors"
	"strings"

	"github.com/codexrelay/codexrelay/app/ledger"
)

// Bounds of what the settings keep of an account, whoever wrote it (a sign-in's claims, an
// import): the settings file has a reader's limit (maxSettingsBytes), and a field that grew
// past it would make every later change fail.
const (
	// maxEmailBytes bounds an account's e-mail (an address has at most 254 bytes).
	maxEmailBytes = 254
	// maxBaseURLBytes bounds a base URL.
	maxBaseURLBytes = 2048
	// maxSecretField bounds each field of an imported secret (a ChatGPT token is a few KiB).
	maxSecretField = 64 << 10
)

// cleanEmail is the e-mail kept with an account: without control or direction characters,
// valid UTF-8, and "" when what is left is longer than an address can be (it is shown, never
// used to sign in).
func cleanEmail(s string) string {
	if len(s) > 4*maxEmailBytes {
		return ""
	}
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if ledger.IsUnsafeRune(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "")))
	if len(s) > maxEmailBytes {
		return ""
	}
	return s
}

// checkSecretSize refuses an imported secret with a field past maxSecretField; its error names
// the field, never its value.
func checkSecretSize(s Secret) error {
	for name, v := range map[string]string{"API key": s.APIKey, "access token": s.AccessToken,
		"refresh token": s.RefreshToken, "ID token": s.IDToken, "account ID": s.AccountID} {
		if len(v) > maxSecretField {
			return errors.New("its " + name + " is longer than any real one")
		}
	}
	return nil
}
