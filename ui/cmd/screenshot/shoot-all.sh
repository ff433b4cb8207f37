#!/usr/bin/env bash
# Renders every screenshot into assets/: the dashboard, the first-run card (with the Codex login,
# with none and no account, and after an API key was added), the Settings window's Codex section, the accounts window and
# the Usage window (its 30 days, at its 800x600), each in the light and the dark
# theme, and the dashboard at 800x500 (with Diagnostics closed and open); the light
# dashboard is also assets/screenshot.png (the README's). Each window runs in a real X
# server (Xvfb) of its own.
#   shoot-all.sh BINARY
set -euo pipefail
bin=$1
here=$(dirname "$0")
shot() { # THEME OUT WINDOW TITLE [ARGS...]
  local theme=$1; shift
  LANG=en_US.UTF-8 FYNE_THEME=$theme xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- \
    bash "$here/shoot.sh" "$bin" "$@"
}
for theme in light dark; do
  shot "$theme" "assets/dashboard-$theme.png" dashboard '^Codex Relay$'
  shot "$theme" "assets/first-run-$theme.png" first-run '^Codex Relay$'
  shot "$theme" "assets/first-run-empty-$theme.png" first-run-empty '^Codex Relay$'
  shot "$theme" "assets/first-run-key-$theme.png" first-run-key '^Codex Relay$'
  shot "$theme" "assets/settings-codex-$theme.png" settings-codex '^Settings'
  shot "$theme" "assets/accounts-$theme.png" accounts '^Accounts'
  shot "$theme" "assets/usage-$theme.png" usage '^Usage' -period 30
done
shot light assets/dashboard-800x500.png dashboard '^Codex Relay$' -size 800x500
shot light assets/dashboard-800x500-diagnostics.png dashboard '^Codex Relay$' -size 800x500 -diagnostics
cp assets/dashboard-light.png assets/screenshot.png
