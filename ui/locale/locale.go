// Package locale keeps Fyne quiet in the C locale. Fyne's lang package reads the locale when it
// is initialised, before main runs, and logs three lines of "Fyne error: Error parsing user
// locale C" for LANG=C.UTF-8 (the default of containers, CI, cron and service managers), since
// "C" is no language tag. Imported by main, this package is initialised first (it needs only the
// standard library, and among the packages ready at a step Go initialises the first by import
// path: github.com/codexrelay sorts before github.com/jeandeaual/go-locale, which Fyne's lang
// needs), and it names English in LANGUAGE for the moment Fyne reads it. Restore gives the
// environment back, for the processes a command starts.
package locale

import (
	"os"
	"strings"
)

// set says whether init set LANGUAGE, and old is what it was.
var (
	set     bool
	old     string
	oldHave bool
)

func init() {
	want, change := languages(os.Getenv)
	if !change {
		return
	}
	old, oldHave = os.LookupEnv("LANGUAGE")
	os.Setenv("LANGUAGE", want)
	set = true
}

// Restore gives LANGUAGE back its value from before init, if init changed it.
func Restore() {
	if !set {
		return
	}
	if oldHave {
		os.Setenv("LANGUAGE", old)
	} else {
		os.Unsetenv("LANGUAGE")
	}
	set = false
}

// languages returns a LANGUAGE list Fyne's locale lookup (github.com/jeandeaual/go-locale)
// can parse, and whether what it would read now has an entry it cannot. That lookup takes the first of
// LC_ALL, LC_MESSAGES and LANG; exactly "C" or "POSIX" means no locale (fine); anything else
// gives way to LANGUAGE if that is set. Each entry loses its encoding (".UTF-8") and becomes a
// tag of its language and territory; an entry whose language is C or POSIX, or that has a
// modifier ("@euro"), is no tag. Those are left out, English when nothing is left.
func languages(getenv func(string) string) (string, bool) {
	loc := ""
	for _, v := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if loc = getenv(v); loc != "" {
			break
		}
	}
	if loc == "C" || loc == "POSIX" {
		return "", false
	}
	list := getenv("LANGUAGE")
	if list == "" {
		list = loc
	}
	if list == "" {
		return "", false
	}
	var keep []string
	bad := false
	for _, e := range strings.Split(list, ":") {
		base, _, _ := strings.Cut(e, ".")
		base, modifier, _ := strings.Cut(base, "@")
		lang, _, _ := strings.Cut(strings.ReplaceAll(base, "-", "_"), "_")
		if lang == "" || lang == "C" || lang == "POSIX" {
			bad = true
			continue
		}
		bad = bad || modifier != ""
		keep = append(keep, base)
	}
	if !bad {
		return "", false
	}
	if len(keep) == 0 {
		keep = []string{"en"}
	}
	return strings.Join(keep, ":"), true
}
