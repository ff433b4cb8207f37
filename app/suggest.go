package app

import "strings"

// Suggest returns the name a mistyped word most likely meant: the closest of names at most
// two edits away, or else the first one the word is a prefix of (or that is a prefix of the
// word); "" when none is that near.
func Suggest(word string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		d := editDistance(word, n)
		if d > 2 && word != "" && (strings.HasPrefix(n, word) || strings.HasPrefix(word, n)) {
			d = 2
		}
		if d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b: the fewest insertions, deletions
// and substitutions of a character that turn a into b.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	prev := make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := range s {
		cur := make([]int, len(t)+1)
		cur[0] = i + 1
		for j := range t {
			cost := 1
			if s[i] == t[j] {
				cost = 0
			}
			cur[j+1] = min(prev[j+1]+1, cur[j]+1, prev[j]+cost)
		}
		prev = cur
	}
	return prev[len(t)]
}
