package proxy

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"sync"
)

// systemName is the operating system and its version, as the Codex CLI's user agent shows
// them ("Debian GNU/Linux 12", "Mac OS 14.5", "Windows").
var systemName = sync.OnceValue(func() string {
	switch runtime.GOOS {
	case "linux":
		if name, version := osRelease(); name != "" {
			return strings.TrimSpace(name + " " + version)
		}
		return "Linux"
	case "darwin":
		if v, err := os.ReadFile("/System/Library/CoreServices/SystemVersion.plist"); err == nil {
			if i := strings.Index(string(v), "<key>ProductVersion</key>"); i >= 0 {
				rest := string(v[i:])
				if a, b := strings.Index(rest, "<string>"), strings.Index(rest, "</string>"); a >= 0 && b > a {
					return "Mac OS " + rest[a+len("<string>"):b]
				}
			}
		}
		return "Mac OS"
	case "windows":
		return "Windows"
	}
	return runtime.GOOS
})

// osRelease reads the distribution's name and version from /etc/os-release.
func osRelease() (name, version string) {
	f, err := os.Open("/etc/os-release")
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"'`)
		switch k {
		case "NAME":
			name = v
		case "VERSION_ID":
			version = v
		}
	}
	return name, version
}

// archName is the architecture as Rust names it (the Codex CLI's user agent).
func archName() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	case "386":
		return "x86"
	}
	return runtime.GOARCH
}
