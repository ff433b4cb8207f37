//go:build unix

package proxy

import (
	"os"
	"syscall"
)

// ownedByUser reports whether the file st describes belongs to the user the relay runs as.
func ownedByUser(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Getuid()
}
