package window

import (
	"image/color"
	"math"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// luminance is a colour's relative luminance (WCAG 2).
func luminance(c color.Color) float64 {
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	lin := func(v uint8) float64 {
		s := float64(v) / 255
		if s <= 0.03928 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(n.R) + 0.7152*lin(n.G) + 0.0722*lin(n.B)
}

// contrast is the WCAG contrast ratio of two colours (1 to 21).
func contrast(a, b color.Color) float64 {
	la, lb := luminance(a), luminance(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

// Every status colour, and every tone the tables and dots use, reaches 4.5:1 against the
// background and against the input background (the Diagnostics panels, the code boxes, the
// fields), in the light and the dark variant.
func TestStatusColoursAreReadable(t *testing.T) {
	th := newTheme()
	names := []fyne.ThemeColorName{theme.ColorNameSuccess, theme.ColorNameWarning, theme.ColorNameError,
		theme.ColorNamePlaceHolder, theme.ColorNameForeground}
	for _, tn := range tones {
		names = append(names, toneColorName(tn))
	}
	for _, v := range []fyne.ThemeVariant{theme.VariantLight, theme.VariantDark} {
		for _, bgName := range []fyne.ThemeColorName{theme.ColorNameBackground, theme.ColorNameInputBackground} {
			bg := th.Color(bgName, v)
			for _, n := range names {
				if r := contrast(th.Color(n, v), bg); r < 4.5 {
					t.Errorf("%s in variant %d: %.2f:1 against %s, want at least 4.5:1", n, v, r, bgName)
				}
			}
		}
	}
	// The check itself: black on white is 21:1, Fyne's own green on white is far below 4.5.
	if r := contrast(color.Black, color.White); math.Abs(r-21) > 0.01 {
		t.Errorf("black on white %.2f", r)
	}
	if r := contrast(theme.DefaultTheme().Color(theme.ColorNameSuccess, theme.VariantLight), color.White); r > 2 {
		t.Errorf("Fyne's green on white %.2f: the test no longer shows what the theme fixes", r)
	}
}

// The charts' colours are the app theme's: each reaches 3:1 (WCAG's minimum for graphics)
// against the background in both variants, and no two are alike.
func TestChartColoursAreReadable(t *testing.T) {
	th := newTheme()
	for _, v := range []fyne.ThemeVariant{theme.VariantLight, theme.VariantDark} {
		bg := th.Color(theme.ColorNameBackground, v)
		seen := map[color.Color]int{}
		for i := range chartColors {
			c := th.Color(chartColor(i), v)
			if r := contrast(c, bg); r < 3 {
				t.Errorf("chart colour %d in variant %d: %.2f:1 against the background, want at least 3:1", i, v, r)
			}
			if j, ok := seen[c]; ok {
				t.Errorf("chart colours %d and %d are both %v", j, i, c)
			}
			seen[c] = i
		}
	}
	// The palette repeats past its end; an unknown name is the default theme's.
	if chartColor(len(chartColors)) != chartColor(0) {
		t.Error("the chart palette does not repeat")
	}
	if c := th.Color(chartColorPrefix+"99", theme.VariantLight); c == chartColors[0][0] {
		t.Errorf("an unknown chart colour name answers %v", c)
	}
}

// An unselected radio button's or check box's outline (the input border) reaches 3:1, WCAG's
// minimum for a control's parts, against the background and the input background in both
// variants (issue 32 Low: the unselected radio nearly invisible in light).
func TestControlOutlinesAreVisible(t *testing.T) {
	th := newTheme()
	for _, v := range []fyne.ThemeVariant{theme.VariantLight, theme.VariantDark} {
		for _, bgName := range []fyne.ThemeColorName{theme.ColorNameBackground, theme.ColorNameInputBackground} {
			if r := contrast(th.Color(theme.ColorNameInputBorder, v), th.Color(bgName, v)); r < 3 {
				t.Errorf("the input border in variant %d: %.2f:1 against %s, want at least 3:1", v, r, bgName)
			}
		}
	}
}
