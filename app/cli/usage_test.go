package cli

import "testing"

func TestUsageCellsAreEscaped(t *testing.T) {
	for in, want := range map[string]string{
		"=1+1": "'=1+1", "+1": "'+1", "-1": "'-1", "@A1": "'@A1", "\tx": "'\tx", "\rx": "'\rx", "a=b": "a=b", "": "",
	} {
		if got := csvText(in); got != want {
			t.Errorf("csvText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := terminalText("a\x1b[31mb\u202ec\td\x9b"); got != "a\uFFFD[31mb\uFFFDc\uFFFDd\uFFFD" {
		t.Errorf("terminalText: %q", got)
	}
}
