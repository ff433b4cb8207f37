//go:build !windows

package app

// setRunKey is Windows only; startAtLogin never calls it elsewhere.
func setRunKey(string, bool) error { return nil }
