package app

import (
	"os/exec"
)

// List returns the accounts of every generic password stored under the service, read from
// `security dump-keychain` (go-keyring itself drives /usr/bin/security).
func (k Keychain) List() ([]string, error) {
	out, err := exec.Command("/usr/bin/security", "dump-keychain").Output()
	if err != nil {
		return nil, keychainError(err)
	}
	return parseKeychainDump(out, k.service()), nil
}
