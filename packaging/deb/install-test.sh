#!/usr/bin/env bash
# Installs the .deb into a clean dpkg root (dpkg --root, no container), runs `codexrelay version` and
# `codexrelay serve` on loopback from the installed files, purges it and checks that no file is left.
# The dependencies are resolved against this machine's apt (apt-get install --simulate): the clean root
# has no libraries of its own, so the binary runs with the host's. Usage: install-test.sh PATH.deb
set -euo pipefail
deb=$(readlink -f "${1:?usage: install-test.sh PATH.deb}")
root=$(mktemp -d); home=$(mktemp -d)
cleanup() { [[ -n ${pid:-} ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$root" "$home"; }
trap cleanup EXIT
say() { printf '+ %s\n' "$*"; }

say "apt-get install --simulate $deb (dependencies against this machine's apt)"
apt-get install --simulate --no-install-recommends "$deb" | grep -E '^(Inst|Conf) codexrelay' >/dev/null

mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" && touch "$root/var/lib/dpkg/status"
before=$(cd "$root" && find . | sort)
say "dpkg --root \$ROOT --force-depends -i $(basename "$deb")"
time dpkg --root="$root" --log=/dev/null --force-depends -i "$deb" >/dev/null
dpkg --root="$root" -L codexrelay | while read -r f; do [[ -f $root$f ]] && printf "  %s\n" "$f"; done

bin="$root/usr/bin/codexrelay"
say "codexrelay version"; "$bin" version
port=$(( 20000 + RANDOM % 20000 ))
say "codexrelay serve --listen 127.0.0.1:$port"
HOME=$home XDG_CONFIG_HOME=$home/.config XDG_DATA_HOME=$home/.local/share XDG_STATE_HOME=$home/.local/state \
  "$bin" serve --listen "127.0.0.1:$port" >"$home/serve.log" 2>&1 & pid=$!
ok=
for _ in $(seq 100); do
  if out=$(curl -fsS --max-time 2 "http://127.0.0.1:$port/health" 2>/dev/null); then ok=1; break; fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
[[ -n $ok ]] || { echo "install-test: codexrelay serve did not answer /health:" >&2; cat "$home/serve.log" >&2; exit 1; }
echo "  /health: $out"
kill -TERM "$pid"; wait "$pid" || true; pid=

say "dpkg --root \$ROOT --purge codexrelay"
dpkg --root="$root" --log=/dev/null --purge codexrelay >/dev/null
left=$(comm -13 <(echo "$before") <(cd "$root" && find . | grep -v '^\./var/lib/dpkg' | sort))
if [[ -n $left ]]; then echo "install-test: left behind after purge:" >&2; echo "$left" >&2; exit 1; fi
echo "install-test: installed, ran version and serve, purged; nothing left behind"
