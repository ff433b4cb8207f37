package app

import (
	"strings"

	"github.com/danieljoos/wincred"
)

// List returns the users of every entry stored under the service: go-keyring names Windows
// credentials "service:user".
func (k Keychain) List() ([]string, error) {
	creds, err := wincred.FilteredList(k.service() + ":*")
	if err != nil {
		return nil, keychainError(err)
	}
	var users []string
	for _, c := range creds {
		if u, ok := strings.CutPrefix(c.TargetName, k.service()+":"); ok {
			users = append(users, u)
		}
	}
	return users, nil
}
