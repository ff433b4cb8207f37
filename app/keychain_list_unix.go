//go:build (dragonfly && cgo) || (freebsd && cgo) || linux || netbsd || openbsd

package app

import (
	ss "github.com/zalando/go-keyring/secret_service"
)

// List returns the users of every entry stored under the service, through the Secret Service
// (the same collection go-keyring writes to).
func (k Keychain) List() ([]string, error) {
	svc, err := ss.NewSecretService()
	if err != nil {
		return nil, keychainError(err)
	}
	coll := svc.GetLoginCollection()
	if err := svc.Unlock(coll.Path()); err != nil {
		return nil, keychainError(err)
	}
	items, err := svc.SearchItems(coll, map[string]string{"service": k.service()})
	if err != nil {
		return nil, keychainError(err)
	}
	var users []string
	for _, it := range items {
		v, err := svc.Object("org.freedesktop.secrets", it).GetProperty("org.freedesktop.Secret.Item.Attributes")
		if err != nil {
			return nil, keychainError(err)
		}
		if attrs, ok := v.Value().(map[string]string); ok && attrs["service"] == k.service() {
			users = append(users, attrs["username"])
		}
	}
	return users, nil
}
