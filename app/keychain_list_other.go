//go:build !linux && !windows && !darwin && !netbsd && !openbsd && !((dragonfly || freebsd) && cgo)

package app

import "errors"

// List is not available here: go-keyring has no keychain on this system.
func (k Keychain) List() ([]string, error) {
	return nil, errors.New("listing keychain entries is not supported on this system")
}
