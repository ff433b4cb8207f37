#!/usr/bin/env bash
# make codex-e2e: the real Codex CLI (npm @openai/codex, pinned) through `codexrelay serve` with two
# fake accounts that seal their reasoning (fake/). Checks what the issue of sealed items promises:
# Codex reaches the relay with the local key from config.toml alone (no variable), turn 1 goes to
# account A, which calls a tool; A then answers 429; the turn after the tool moves to B without
# A's sealed reasoning, and Codex finishes with B's answer, over WebSocket and over HTTP.
# Runs inside its own keyring session (.ci/with-keyring) and throw-away homes; loopback only.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$1 # the codexrelay binary
codex_version=${CODEX_VERSION:-0.171.0}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
cli="$top/bin/codex-cli-$codex_version"
if [ ! -x "$cli/node_modules/.bin/codex" ]; then
  mkdir -p "$cli" && (cd "$cli" && npm install --silent --no-audit --no-fund "@openai/codex@$codex_version" >/dev/null)
fi
(cd "$top" && go build -o "$work/fake" ./packaging/codex-e2e/fake)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
fail=0
for transport in websocket http; do
  pa=$(port) pb=$(port) pr=$(port)
  logs="$work/$transport/logs"; mkdir -p "$logs"
  "$work/fake" "$pa" "$pb" "$logs" 2>"$work/$transport/fake.log" &
  fake=$!
  export HOME="$work/$transport/home" XDG_CONFIG_HOME="$work/$transport/config" CODEX_HOME="$work/$transport/codex"
  mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$CODEX_HOME" "$work/$transport/cwd"
  unset CODEXRELAY_API_KEY OPENAI_API_KEY CODEXRELAY_LISTEN
  export LANG=en_US.UTF-8
  "$bin" settings set listen "127.0.0.1:$pr" >/dev/null
  printf 'sk-a' | "$bin" accounts add --name a --kind openai --base-url "http://127.0.0.1:$pa/v1" >/dev/null
  printf 'sk-b' | "$bin" accounts add --name b --kind openai --base-url "http://127.0.0.1:$pb/v1" >/dev/null
  "$bin" local-key on >/dev/null
  key=$("$bin" local-key show | tail -n 1)
  "$bin" codex-config --write >/dev/null
  [ "$transport" = http ] && sed -i 's/supports_websockets = true/supports_websockets = false/' "$CODEX_HOME/config.toml"
  mode=$(stat -c %a "$CODEX_HOME/config.toml")
  "$bin" serve --listen "127.0.0.1:$pr" 2>"$work/$transport/relay.log" &
  relay=$!
  for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$pr/health" && break; sleep 0.1; done
  (cd "$work/$transport/cwd" && timeout 180 "$cli/node_modules/.bin/codex" exec --skip-git-repo-check \
    --dangerously-bypass-approvals-and-sandbox -m gpt-5-codex "say hello" >"$work/$transport/codex.out" 2>"$work/$transport/codex.err") || true
  traces=$(curl -s -H "Authorization: Bearer $key" "http://127.0.0.1:$pr/relay/traces?limit=10")
  kill "$relay" "$fake"; wait "$relay" "$fake" 2>/dev/null || true
  leaked=$(cat "$logs"/B-*-body.json 2>/dev/null | grep -c 'gAAAABA' || true)
  omitted=$(printf '%s' "$traces" | python3 -c 'import json,sys; print(sum(t.get("sealedOmitted",0) for t in json.load(sys.stdin)))')
  served=$(printf '%s' "$traces" | python3 -c 'import json,sys; t=json.load(sys.stdin); print(" ".join(x.get("account","-") for x in reversed(t)))')
  answer=$(tail -n 1 "$work/$transport/codex.out" 2>/dev/null || true)
  echo "$transport: codex answered '${answer}'; turns served by: ${served}; sealed items left out: ${omitted}; A's sealed items B received: ${leaked}; config.toml mode ${mode}"
  if [ "$answer" != done ] || [ "$omitted" -lt 1 ] || [ "$leaked" != 0 ] || [ "$mode" != 600 ]; then
    fail=1
    echo "--- codex stderr"; tail -n 20 "$work/$transport/codex.err"; echo "--- relay log"; tail -n 20 "$work/$transport/relay.log"
  fi
done
[ $fail = 0 ] && echo "codex-e2e: passed" || { echo "codex-e2e: FAILED"; exit 1; }
