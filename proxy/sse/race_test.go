//go:build race

package sse

// raceEnabled is true when testing with -race, which adds allocations of its own.
const raceEnabled = true
