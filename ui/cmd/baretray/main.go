// Command baretray is a bare fyne.io/systray tray (an icon, a tooltip, two menu items and
// nothing else): the floor that `make idle` measures the tray process against.
package main

import (
	"fyne.io/systray"

	"github.com/codexrelay/codexrelay/assets"
)

func main() {
	systray.Run(func() {
		systray.SetTitle("bare tray")
		systray.SetIcon(assets.TrayServing)
		systray.SetTooltip("a bare fyne.io/systray tray")
		systray.AddMenuItem("Hello", "")
		quit := systray.AddMenuItem("Quit", "")
		go func() {
			<-quit.ClickedCh
			systray.Quit()
		}()
	}, nil)
}
