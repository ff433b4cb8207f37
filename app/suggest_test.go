package app

import "testing"

func TestSuggest(t *testing.T) {
	names := []string{"serve", "accounts", "aliases", "settings", "local-key"}
	for word, want := range map[string]string{
		"acounts": "accounts", "accountz": "accounts", "serv": "serve", "acc": "accounts", "local": "local-key",
		"setings": "settings", "aliasess": "aliases", "xyz": "", "": "", "bench": "",
	} {
		if got := Suggest(word, names); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
	if d := editDistance("kitten", "sitting"); d != 3 {
		t.Errorf("editDistance = %d", d)
	}
}
