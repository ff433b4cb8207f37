package app

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// parseKeychainDump reads the output of macOS `security dump-keychain` and returns the
// account ("acct") of each generic password ("genp") whose service ("svce") is service.
func parseKeychainDump(out []byte, service string) []string {
	var users []string
	var class, svce, acct string
	flush := func() {
		if class == "genp" && svce == service {
			users = append(users, acct)
		}
		class, svce, acct = "", "", ""
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "keychain: "):
			flush()
		case strings.HasPrefix(line, "class: "):
			class = strings.Trim(strings.TrimPrefix(line, "class: "), `"`)
		case strings.HasPrefix(line, `"svce"<blob>=`):
			svce = dumpValue(strings.TrimPrefix(line, `"svce"<blob>=`))
		case strings.HasPrefix(line, `"acct"<blob>=`):
			acct = dumpValue(strings.TrimPrefix(line, `"acct"<blob>=`))
		}
	}
	flush()
	return users
}

// dumpValue decodes a value as `security` prints it: "text" or 0xHEX  "text".
func dumpValue(v string) string {
	if strings.HasPrefix(v, `"`) {
		if s, err := strconv.Unquote(v); err == nil {
			return s
		}
		return strings.Trim(v, `"`)
	}
	if i := strings.Index(v, `  "`); i >= 0 {
		return dumpValue(v[i+2:])
	}
	return ""
}
