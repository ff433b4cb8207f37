// Package assets holds the embedded icons.
package assets

import _ "embed"

// Icon is the application icon (256x256 PNG).
//
//go:embed icon.png
var Icon []byte
