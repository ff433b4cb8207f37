package locale

import "testing"

func TestLanguagesFyneCanParse(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		want    string
		changes bool
	}{
		{map[string]string{"LANG": "C.UTF-8"}, "en", true},
		{map[string]string{"LANG": "C.utf8"}, "en", true},
		{map[string]string{"LANG": "POSIX.UTF-8"}, "en", true},
		{map[string]string{"LC_ALL": "C"}, "", false},
		{map[string]string{"LANG": "C"}, "", false},
		{map[string]string{}, "", false},
		{map[string]string{"LANG": "fr_FR.UTF-8"}, "", false},
		{map[string]string{"LANG": "de_DE@euro"}, "de_DE", true},
		{map[string]string{"LANG": "en_US.UTF-8", "LANGUAGE": "fr:en"}, "", false},
		{map[string]string{"LANG": "C.UTF-8", "LANGUAGE": "C"}, "en", true},
		{map[string]string{"LANG": "en_US.UTF-8", "LANGUAGE": "C:fr"}, "fr", true},
		{map[string]string{"LC_ALL": "C", "LANGUAGE": "C"}, "", false}, // exactly C: LANGUAGE is not read
	} {
		got, changes := languages(func(k string) string { return c.env[k] })
		if changes != c.changes || (changes && got != c.want) {
			t.Errorf("%v: %q %v, want %q %v", c.env, got, changes, c.want, c.changes)
		}
	}
}
