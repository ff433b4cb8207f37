//go:build !unix

package proxy

import "os"

// ownedByUser reports whether the file st describes belongs to the user the relay runs as. On
// Windows the folder under the user's profile is the user's by its ACL.
func ownedByUser(os.FileInfo) bool { return true }
