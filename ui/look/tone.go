package look

// Tone is what a piece of text says by its colour: nothing special, secondary, good, a
// warning, or a problem. Tables and dots use tones, never raw colours, so that every colour
// on screen is one the contrast test checks (the window process maps each to its theme's
// colour; the tray's menu dots have a fixed colour each).
type Tone int

const (
	Normal Tone = iota
	Dim         // secondary: "–", hints, disabled accounts
	Good        // ready, answered
	Warn        // resting, canceled
	Bad         // needs a sign-in, failed
)
