package window

import (
	"image/color"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"

	"github.com/codexrelay/codexrelay/ui/look"
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
	// The outline of an unselected radio button or check box, and a field's border: Fyne's
	// #e3e3e3 on white (1.3:1) left an unselected radio nearly invisible in the light variant.
	// These reach 3:1, WCAG's minimum for the parts of a control.
	theme.ColorNameInputBorder: {{R: 0x85, G: 0x85, B: 0x85, A: 0xff}, {R: 0x7a, G: 0x7a, B: 0x7a, A: 0xff}},
}

// chartColors are the colours of the usage charts' series (one per account), [light, dark],
// after the Okabe-Ito palette (told apart with the common colour blindnesses), darkened for the
// light variant and lightened for the dark one: each reaches 3:1 against the background (WCAG's
// minimum for graphics; in fact at least 4:1). The charts name them chartColor(i).
var chartColors = [][2]color.NRGBA{
	{{R: 0x00, G: 0x72, B: 0xb2, A: 0xff}, {R: 0x56, G: 0xb4, B: 0xe9, A: 0xff}}, // blue
	{{R: 0xc3, G: 0x54, B: 0x00, A: 0xff}, {R: 0xf0, G: 0x8a, B: 0x3c, A: 0xff}}, // vermilion
	{{R: 0x00, G: 0x80, B: 0x5c, A: 0xff}, {R: 0x2f, G: 0xc5, B: 0x9a, A: 0xff}}, // bluish green
	{{R: 0xa8, G: 0x45, B: 0x8a, A: 0xff}, {R: 0xe0, G: 0x8c, B: 0xc4, A: 0xff}}, // reddish purple
	{{R: 0x8a, G: 0x6d, B: 0x00, A: 0xff}, {R: 0xe6, G: 0xc2, B: 0x29, A: 0xff}}, // ochre
	{{R: 0x5b, G: 0x5f, B: 0xc7, A: 0xff}, {R: 0xa3, G: 0xa6, B: 0xff, A: 0xff}}, // indigo
}

// chartColorPrefix starts the theme colour names of chartColors.
const chartColorPrefix = "codexrelay-chart-"

// chartColor is the theme colour name of the i-th chart series (the palette repeats).
func chartColor(i int) fyne.ThemeColorName {
	return fyne.ThemeColorName(chartColorPrefix + strconv.Itoa(i%len(chartColors)))
}

// Color returns the readable colour for the status and hint colours, the chart colours, and
// the default otherwise.
func (t appTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	c, ok := readableColors[n]
	if !ok {
		if i, err := strconv.Atoi(strings.TrimPrefix(string(n), chartColorPrefix)); err == nil &&
			strings.HasPrefix(string(n), chartColorPrefix) && i >= 0 && i < len(chartColors) {
			c, ok = chartColors[i], true
		}
	}
	if ok {
		if v == theme.VariantDark {
			return c[1]
		}
		return c[0]
	}
	return t.Theme.Color(n, v)
}

// toneColorName is the theme colour of a tone (look.Tone).
func toneColorName(t look.Tone) fyne.ThemeColorName {
	switch t {
	case look.Dim:
		return theme.ColorNamePlaceHolder
	case look.Good:
		return theme.ColorNameSuccess
	case look.Warn:
		return theme.ColorNameWarning
	case look.Bad:
		return theme.ColorNameError
	}
	return theme.ColorNameForeground
}

// toneColor is the tone's colour in the current theme.
func toneColor(t look.Tone) color.Color { return theme.Color(toneColorName(t)) }

// tones lists every tone (for the contrast test).
var tones = []look.Tone{look.Normal, look.Dim, look.Good, look.Warn, look.Bad}

// padded is the app's theme with its own padding: compact for the dense dashboard and the
// accounts window, dense (the least) for the Usage window, which fits its charts and tables
// into 800x600.
type padded struct{ padding, inner float32 }

var (
	compact = padded{padding: 3, inner: 4}
	dense   = padded{padding: 2, inner: 3}
)

// base is the app's current theme.
func base() fyne.Theme { return fyne.CurrentApp().Settings().Theme() }

func (padded) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	return base().Color(n, v)
}
func (padded) Font(s fyne.TextStyle) fyne.Resource     { return base().Font(s) }
func (padded) Icon(n fyne.ThemeIconName) fyne.Resource { return base().Icon(n) }
func (p padded) Size(n fyne.ThemeSizeName) float32 {
	switch n {
	case theme.SizeNamePadding:
		return p.padding
	case theme.SizeNameInnerPadding:
		return p.inner
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
	return compact.Color(n, v)
}
func (barTheme) Font(s fyne.TextStyle) fyne.Resource     { return compact.Font(s) }
func (barTheme) Icon(n fyne.ThemeIconName) fyne.Resource { return compact.Icon(n) }
func (barTheme) Size(n fyne.ThemeSizeName) float32       { return compact.Size(n) }
