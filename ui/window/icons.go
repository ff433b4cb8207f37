package window

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"

	"github.com/codexrelay/codexrelay/assets"
)

var (
	// iconApp is the app's icon, on each window.
	iconApp = fyne.NewStaticResource("codexrelay.png", assets.Icon)
	// iconUsage is a small bar chart, drawn in the theme's foreground colour.
	iconUsage = theme.NewThemedResource(fyne.NewStaticResource("usage.svg", []byte(
		`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path fill="#000" `+
			`d="M3 19h18v2H3zM5 11h3v7H5zm5.5-6h3v13h-3zM16 8h3v10h-3z"/></svg>`)))
)
