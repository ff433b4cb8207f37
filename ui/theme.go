package ui

import (
	"image/color"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// appTheme is Codex Relay's theme: Fyne's default theme with status colours and secondary text
// that people can read. Fyne's own green, orange and red reach only 1.5:1, 2.1:1 and 3.7:1
// against its white background, and its grey hint text 3.5:1; each colour here reaches at least
// 4.5:1 (WCAG AA for body text) against the background and the input background (panels, code
// boxes, fields) of the variant it belongs to, light or dark. theme_test.go checks every one.
type appTheme struct{ fyne.Theme }

// newTheme wraps Fyne's default theme (which follows the system's light or dark variant).
func newTheme() fyne.Theme { return appTheme{theme.DefaultTheme()} }

// readableColors are the colours appTheme replaces: [light, dark].
var readableColors = map[fyne.ThemeColorName][2]color.NRGBA{
	theme.ColorNameSuccess:     {{R: 0x1d, G: 0x7a, B: 0x33, A: 0xff}, {R: 0x57, G: 0xd1, B: 0x76, A: 0xff}},
	theme.ColorNameWarning:     {{R: 0x9a, G: 0x56, B: 0x00, A: 0xff}, {R: 0xf2, G: 0xb1, B: 0x3d, A: 0xff}},
	theme.ColorNameError:       {{R: 0xc4, G: 0x26, B: 0x26, A: 0xff}, {R: 0xff, G: 0x7b, B: 0x72, A: 0xff}},
	theme.ColorNamePlaceHolder: {{R: 0x6b, G: 0x6b, B: 0x6b, A: 0xff}, {R: 0xa6, G: 0xa6, B: 0xa6, A: 0xff}},
}

// Color returns the readable colour for the status and hint colours, the default otherwise.
func (t appTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	if c, ok := readableColors[n]; ok {
		if v == theme.VariantDark {
			return c[1]
		}
		return c[0]
	}
	return t.Theme.Color(n, v)
}

// tone is what a piece of text says by its colour: nothing special, secondary, good, a
// warning, or a problem. Tables and dots use tones, never raw colours, so that every colour
// on screen is one the contrast test checks.
type tone int

const (
	toneNormal tone = iota
	toneDim         // secondary: "–", hints, disabled accounts
	toneGood        // ready, answered
	toneWarn        // resting, canceled
	toneBad         // needs a sign-in, failed
)

// colorName is the theme colour of a tone.
func (t tone) colorName() fyne.ThemeColorName {
	switch t {
	case toneDim:
		return theme.ColorNamePlaceHolder
	case toneGood:
		return theme.ColorNameSuccess
	case toneWarn:
		return theme.ColorNameWarning
	case toneBad:
		return theme.ColorNameError
	}
	return theme.ColorNameForeground
}

// color is the tone's colour in the current theme.
func (t tone) color() color.Color { return theme.Color(t.colorName()) }

// tones lists every tone (for the contrast test).
var tones = []tone{toneNormal, toneDim, toneGood, toneWarn, toneBad}

// compact is the app's theme with tighter padding, for the dense dashboard.
type compact struct{}

// base is the app's current theme.
func base() fyne.Theme { return fyne.CurrentApp().Settings().Theme() }

func (compact) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	return base().Color(n, v)
}
func (compact) Font(s fyne.TextStyle) fyne.Resource     { return base().Font(s) }
func (compact) Icon(n fyne.ThemeIconName) fyne.Resource { return base().Icon(n) }
func (compact) Size(n fyne.ThemeSizeName) float32 {
	switch n {
	case theme.SizeNamePadding:
		return 3
	case theme.SizeNameInnerPadding:
		return 4
	}
	return base().Size(n)
}

// barTheme colours a quota bar by how much is used: primary, then warning, then error.
type barTheme struct{ level float64 }

func (b barTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	if n == theme.ColorNamePrimary {
		switch {
		case b.level >= 0.9:
			return base().Color(theme.ColorNameError, v)
		case b.level >= 0.75:
			return base().Color(theme.ColorNameWarning, v)
		}
	}
	return compact{}.Color(n, v)
}
func (barTheme) Font(s fyne.TextStyle) fyne.Resource     { return compact{}.Font(s) }
func (barTheme) Icon(n fyne.ThemeIconName) fyne.Resource { return compact{}.Icon(n) }
func (barTheme) Size(n fyne.ThemeSizeName) float32       { return compact{}.Size(n) }
