#!/usr/bin/env bash
# make idle: how much CPU (and memory, VmRSS) the tray app spends when nothing happens, measured from
# /proc/PID/stat (utime + stime) over a minute, in two cases:
#   - the dashboard open (brought to the front by a second launch, as a user would): the
#     window process that shows it, and the tray process beside it;
#   - tray only: a StatusNotifier host runs (gtk-sni-tray-standalone --watcher), so the app
#     shows its tray icon and no window.
# Everything runs in a throw-away home under Xvfb and a private D-Bus session with an unlocked
# gnome-keyring, with one API-key account whose base URL nothing listens on (no network).
# With the screenshot binary as BARE, it measures a bare Fyne app (a label, a tray menu) the
# same way: the floor that Fyne's driver sets.
#   idle.sh BINARY [SECONDS [BARE]]
set -euo pipefail
bin=$(realpath "$1")
secs=${2:-60}
barebin=${3:+$(realpath "$3")}

if [ -z "${IDLE_INSIDE:-}" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  export HOME="$tmp" XDG_CONFIG_HOME="$tmp/config" XDG_DATA_HOME="$tmp/data" XDG_RUNTIME_DIR="$tmp/run"
  export LANG=en_US.UTF-8 CODEXRELAY_LISTEN=${CODEXRELAY_LISTEN:-127.0.0.1:17455} IDLE_INSIDE=1
  mkdir -p "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
  exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- bash "$0" "$bin" "$secs" "$barebin"
fi

printf %s idle-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null
"$bin" accounts add --name idle --kind openai --base-url http://127.0.0.1:9/v1 <<< "sk-idle-0000" >/dev/null

hz=$(getconf CLK_TCK)
# cpu PID: the process's user + system time so far, in clock ticks (fields 14 and 15 of
# /proc/PID/stat, counted after the command name, which may hold spaces).
cpu() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
rss() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

# measure LABEL TARGET PID: the share of one core the process used over $secs seconds.
measure() {
  local label=$1 target=$2 pid=$3 t0 t1 c0 c1
  c0=$(cpu "$pid") t0=$(date +%s.%N)
  sleep "$secs"
  c1=$(cpu "$pid") t1=$(date +%s.%N)
  awk -v l="$label" -v t="$target" -v c=$((c1 - c0)) -v hz="$hz" -v t0="$t0" -v t1="$t1" -v r="$(rss "$pid")" \
    'BEGIN { d = t1 - t0; printf "%-16s %.3f%% of a core over %.0f s (%d ticks)   RSS %s MB", l, 100 * c / hz / d, d, c, r
             if (t != "-") printf "   target < %s%%", t
             print "" }'
}

# start [ARGS...]: the tray app (or, with ARGS, the bare app) in the background; its pid in $app.
start() {
  if [ $# -gt 0 ]; then
    "$barebin" "$@" 2>>"$HOME/app.log" &
    app=$!
    sleep 2
    return
  fi
  "$bin" 2>>"$HOME/app.log" &
  app=$!
  for _ in $(seq 50); do # until it listens
    (exec 3<>"/dev/tcp/${CODEXRELAY_LISTEN%:*}/${CODEXRELAY_LISTEN##*:}") 2>/dev/null && break
    sleep 0.2
  done
}
stop() {
  kill -TERM "$app" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$app" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$app" 2>/dev/null || true
  wait "$app" 2>/dev/null || true
}
window() { xdotool search --onlyvisible --name '^Codex Relay$' 2>/dev/null | head -n 1; }

echo "Codex Relay at idle: one API-key account, no request, ${secs} s per case"

# 1. The dashboard open.
start
"$bin" >/dev/null # the second launch brings the dashboard to the front and exits
sleep 10          # let it settle
[ -n "$(window)" ] || echo "  (no dashboard window is visible: the figure below is not the dashboard's)"
# The dashboard is in the window process, a child of the tray process: both are measured at once.
win=$(pgrep -P "$app" -f ' window ' | head -n 1 || true)
if [ -n "$win" ]; then
  measure "dashboard open" 1 "$win" &
  m=$!
  measure "  its tray process" 0.2 "$app"
  wait "$m"
else
  echo "  (no window process runs)"
fi
stop
if [ -n "$barebin" ]; then
  start -window bare
  sleep 8
  measure "  bare Fyne" - "$app"
  stop
fi

# 2. Tray only: with a StatusNotifier host the app opens no window.
if command -v gtk-sni-tray-standalone >/dev/null; then
  gtk-sni-tray-standalone --watcher >/dev/null 2>&1 &
  host=$!
  for _ in $(seq 50); do
    dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
      org.freedesktop.DBus.NameHasOwner string:org.kde.StatusNotifierWatcher 2>/dev/null | grep -q true && break
    sleep 0.2
  done
  start
  sleep 10
  [ -z "$(window)" ] || echo "  (a window is open although a tray host runs: the figure below is not tray-only)"
  measure "tray only" 0.2 "$app"
  stop
  if [ -n "$barebin" ]; then
    start -window bare-tray
    sleep 8
    measure "  bare Fyne" - "$app"
    stop
  fi
  kill "$host" 2>/dev/null || true
else
  echo "tray only        not measured: gtk-sni-tray-standalone (Debian's haskell-gtk-sni-tray-utils) is not installed"
fi
