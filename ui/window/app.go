package window

import (
	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"

	"github.com/codexrelay/codexrelay/ui/look"
)

// NewApp is the window process's Fyne app: Codex Relay's ID, name and version (the windows'
// title and the app's identity come from the app's metadata, which only a build by the fyne
// tool would embed), and no preferences store. The windows keep nothing in Fyne's preferences
// (the relay's settings file holds every setting; Fyne's file picker remembers its folder for
// the process's life), and a store on disk is one file for every window process of the user:
// Fyne rewrites it when a process ends, truncating it first, while the next window process
// watches it and reloads it half written ("Preferences load error: EOF"). Fyne gives an app a
// store on disk only when the app has an ID as it is made, so the ID is set just after.
func NewApp(version string) fyne.App {
	meta := fyne.AppMetadata{Name: "Codex Relay", Version: version}
	fyneapp.SetMetadata(meta)
	fa := fyneapp.NewWithID("")
	meta.ID = look.AppID
	fyneapp.SetMetadata(meta)
	return fa
}
