#!/usr/bin/env bash
# Shows a window with prepared figures and captures it into a PNG. Runs inside a display
# (shoot-all.sh wraps it in xvfb-run and dbus-run-session).
#   shoot.sh BINARY OUT.png [WINDOW [TITLE-REGEX [ARGS...]]]
#   WINDOW: dashboard (default), first-run, accounts, settings, usage; ARGS go to the binary
#   (-size WxH, -period 7|30)
set -euo pipefail
bin=$1 out=$2 window=${3:-dashboard} title=${4:-^Codex Relay$}
shift $(( $# < 4 ? $# : 4 ))
"$bin" -window "$window" -for 90s "$@" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
win=$(timeout 60 xdotool search --sync --onlyvisible --name "$title" | head -n 1)
# Xvfb starts with the pointer mid-screen, over a table row: park it on the window's corner
# (padding, nothing to hover) so that no row shows a hover highlight.
xdotool mousemove --window "$win" 1 1
sleep 3 # let the first frames draw (and a -size resize settle)
import -window "$win" "$out"
echo "wrote $out"
