#!/usr/bin/env bash
# Installs the .deb into a clean dpkg root (dpkg --root, no container), runs `codexrelay version` and
# `codexrelay serve` on loopback from the installed files, then `serve` as the packaged systemd user
# unit runs it, inside the unit's sandbox (unit-sandbox.sh: ProtectSystem=strict, its ReadWritePaths,
# PrivateTmp), and checks that a request through it lands in the usage ledger; purges the package
# and checks that no file is left. The dependencies are resolved against this machine's apt
# (apt-get install --simulate): the clean root has no libraries of its own, so the binary runs with
# the host's. Everything lives in one folder beside the .deb; when that is under /tmp (a clone
# there), the unit's sandbox keeps it visible through its private /tmp, as /usr and /home are.
# Usage: install-test.sh PATH.deb PATH-TO-FAKE-UPSTREAM
set -euo pipefail
deb=$(readlink -f "${1:?usage: install-test.sh PATH.deb UPSTREAM}")
upstream=$(readlink -f "${2:?usage: install-test.sh PATH.deb UPSTREAM}")
here=$(dirname "$(readlink -f "$0")")
work=$(mktemp -d "$(dirname "$deb")/deb-test.XXXXXX")
root=$work/root home=$work/home uhome=$work/unit-home
mkdir -p "$root" "$home" "$uhome"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
  rmdir /dev/shm/unit-sandbox-tmp.*/* /dev/shm/unit-sandbox-tmp.* 2>/dev/null || true # the sandbox's empty mount points
}
trap cleanup EXIT
say() { printf '+ %s\n' "$*"; }

# waitHealth PORT LOG PID: waits (10 s at most) for /health on PORT, or fails with the log.
waitHealth() {
  for _ in $(seq 100); do
    if out=$(curl -fsS --max-time 2 "http://127.0.0.1:$1/health" 2>/dev/null); then echo "  /health: $out"; return; fi
    kill -0 "$3" 2>/dev/null || break
    sleep 0.1
  done
  echo "install-test: codexrelay serve did not answer /health:" >&2; cat "$2" >&2; exit 1
}

# simulate [APT-OPTION...]: apt-get install --simulate of the .deb; its dependencies are met. With this
# very version installed (a developer's own build), apt has nothing to install and says "codexrelay is
# already the newest version" instead of "Inst codexrelay": either passes (a missing dependency fails
# apt-get itself), so that the test passes with the package installed or not.
simulate() {
  local sim
  sim=$(LC_ALL=C apt-get install --simulate --no-install-recommends "$@" "$deb")
  grep -qE '^(Inst|Conf) codexrelay|^codexrelay is already the newest version' <<<"$sim" ||
    { echo "install-test: apt-get install --simulate would not install the package:" >&2; echo "$sim" >&2; exit 1; }
}
say "apt-get install --simulate $deb (dependencies against this machine's apt)"
simulate

mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" && touch "$root/var/lib/dpkg/status"
before=$(cd "$root" && find . | sort)
say "dpkg --root \$ROOT --force-depends -i $(basename "$deb")"
time dpkg --root="$root" --log=/dev/null --force-depends --force-script-chrootless -i "$deb" >/dev/null
dpkg --root="$root" -L codexrelay | while read -r f; do [[ -f $root$f ]] && printf "  %s\n" "$f"; done

say "apt-get install --simulate $deb, as on a machine where this version is installed"
{ cat /var/lib/dpkg/status; echo; cat "$root/var/lib/dpkg/status"; } >"$work/status-installed"
simulate -o Dir::State::status="$work/status-installed"

bin="$root/usr/bin/codexrelay"
say "codexrelay version"; "$bin" version
port=$(( 20000 + RANDOM % 20000 ))
say "codexrelay serve --listen 127.0.0.1:$port"
HOME=$home XDG_CONFIG_HOME=$home/.config XDG_DATA_HOME=$home/.local/share XDG_STATE_HOME=$home/.local/state \
  "$bin" serve --listen "127.0.0.1:$port" >"$home/serve.log" 2>&1 & pid=$!; pids+=("$pid")
waitHealth "$port" "$home/serve.log" "$pid"
kill -TERM "$pid"; wait "$pid" || true

# The packaged unit's serve, in its sandbox: a home of its own with XDG's defaults (as the unit's
# %h paths assume), an account on a fake upstream, one request; then the ledger has its row.
unit="$root/usr/lib/systemd/user/codexrelay.service"
# (env execs the command, and the sandbox script execs serve: $! is serve's PID.)
user_env=(env -u XDG_CONFIG_HOME -u XDG_DATA_HOME -u XDG_STATE_HOME -u XDG_RUNTIME_DIR HOME="$uhome")
as_user() { "${user_env[@]}" "$@"; }
"$upstream" >"$work/upstream.url" & pids+=($!)
for _ in $(seq 50); do [[ -s $work/upstream.url ]] && break; sleep 0.1; done
url=$(head -n 1 "$work/upstream.url")
say "codexrelay accounts add --name deb --kind openai --base-url $url (key on stdin)"
printf 'sk-deb-test\n' | as_user "$bin" accounts add --name deb --kind openai --base-url "$url" 2>&1 | sed 's/^/  /'
key=$(as_user "$bin" local-key show)
port=$(( 20000 + RANDOM % 20000 ))
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
read -ra cmd <<<"${exec_start//\/usr\/bin\/codexrelay/$bin}"
cmd=("${cmd[@]//127.0.0.1:7455/127.0.0.1:$port}")
say "the unit's ExecStart in its sandbox: ${cmd[*]#"$root"}"
# The dpkg root and the unit's home stand for /usr and /home: kept visible if they are under /tmp.
"${user_env[@]}" UNIT_SANDBOX_KEEP="$work" bash "$here/unit-sandbox.sh" "$unit" "$uhome" -- "${cmd[@]}" >"$uhome/serve.log" 2>&1 & pid=$!; pids+=("$pid")
waitHealth "$port" "$uhome/serve.log" "$pid"
say "POST /v1/responses through it"
curl -fsS --max-time 20 -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d '{"model":"deb-test-model","input":"Reply OK.","stream":false}' "http://127.0.0.1:$port/v1/responses" | head -c 200; echo
kill -TERM "$pid"; wait "$pid" || true
if grep -q "usage ledger unavailable" "$uhome/serve.log"; then
  echo "install-test: the unit's sandbox keeps serve from its usage ledger:" >&2; cat "$uhome/serve.log" >&2; exit 1
fi
say "codexrelay usage --by model (the ledger serve wrote in the sandbox: $(cd "$uhome" && ls .local/share/codexrelay/usage.db))"
report=$(as_user "$bin" usage --by model)
echo "$report" | sed 's/^/  /'
grep -q "deb-test-model" <<<"$report" || { echo "install-test: no ledger row for the request" >&2; exit 1; }

say "dpkg --root \$ROOT --purge codexrelay"
# The maintainer scripts run on this machine (the clean root has no shell): the removal note only
# prints, and names the command that undoes what Codex was given.
note=$(dpkg --root="$root" --log=/dev/null --force-script-chrootless --purge codexrelay)
echo "$note" | sed 's/^/  /'
# It says what to do before removing, what to do now (the backups, by hand) and what stays.
for want in "codexrelay codex-config --remove" "before removing" "config.toml.bak-" ".env.bak-" "~/.config/codexrelay" "~/.local/share/codexrelay"; do
  grep -qF -- "$want" <<<"$note" || { echo "install-test: the removal note does not name $want" >&2; exit 1; }
done
left=$(comm -13 <(echo "$before") <(cd "$root" && find . | grep -v '^\./var/lib/dpkg' | sort))
if [[ -n $left ]]; then echo "install-test: left behind after purge:" >&2; echo "$left" >&2; exit 1; fi
echo "install-test: installed, ran version and serve, served a request into the ledger under the unit's sandbox, purged; nothing left behind"
