#!/usr/bin/env bash
# Re-makes proxy/testdata/codex-<version>/: runs the real Codex CLI (npm @openai/codex, pinned as in
# run.sh) against packaging/codex-e2e/capture, a loopback stand-in for the Responses backend that
# records every request and WebSocket frame Codex sends, for each case below.
#
#   packaging/codex-e2e/capture.sh [CASE...]     (CODEX_VERSION=0.171.0, PORT=18471, OUT=...)
#
# Cases: http-lite ws-lite http-nonlite ws-nonlite multiagent chatgpt-ws chatgpt-http web ws-interrupt
# compact-local compact-remote compact-ws compact-chatgpt compact-manual (default: all). ws-interrupt
# drives Codex's TUI under tmux and presses Esc mid-turn; compact-manual types /compact there.
# Loopback only: HTTP(S)_PROXY points at a closed local port so that Codex's own calls elsewhere
# (plugin sync, telemetry) fail on this machine; NO_PROXY lets it reach the capture server.
# Records are redacted as they are written: the Authorization value becomes "Bearer REDACTED" and
# the throw-away home becomes /home/user (so the working folder reads /home/user/project).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
codex_version=${CODEX_VERSION:-0.171.0}
port=${PORT:-18471}
out=${OUT:-$top/proxy/testdata/codex-${codex_version%.*}}
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(http-lite ws-lite http-nonlite ws-nonlite multiagent chatgpt-ws chatgpt-http web ws-interrupt
  compact-local compact-remote compact-ws compact-chatgpt compact-manual)

cli="$top/bin/codex-cli-$codex_version"
if [ ! -x "$cli/node_modules/.bin/codex" ]; then
  mkdir -p "$cli" && (cd "$cli" && npm install --silent --no-audit --no-fund "@openai/codex@$codex_version" >/dev/null)
fi
codex="$cli/node_modules/.bin/codex"
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; [ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT
(cd "$top" && go build -o "$work/capture" ./packaging/codex-e2e/capture)
mkdir -p "$out"

# The catalog Codex bundles, which the capture server also serves as its model list.
mkdir -p "$work/bundled"
HOME="$work/bundled" CODEX_HOME="$work/bundled" "$codex" debug models --bundled >"$out/models-bundled.json" 2>/dev/null

# chatgpt_auth ACCOUNT: a ChatGPT-mode auth.json whose tokens are unsigned JWTs that expire in 2100
# (Codex reads the claims without verifying them, and does not refresh them).
chatgpt_auth() {
  python3 - "$1" <<'PY'
import base64, json, sys, time
acct = sys.argv[1]
b = lambda o: base64.urlsafe_b64encode(json.dumps(o, separators=(",", ":")).encode()).rstrip(b"=").decode()
jwt = lambda claims: b({"alg": "none", "typ": "JWT"}) + "." + b(claims) + ".c2ln"
auth = {"chatgpt_account_id": acct, "chatgpt_plan_type": "pro", "chatgpt_user_id": "user-capture", "user_id": "user-capture"}
common = {"exp": 4102444800, "iat": 1764460800, "sub": "auth0|capture", "https://api.openai.com/auth": auth}
idt = dict(common, email="capture@example.com", email_verified=True)
print(json.dumps({"auth_mode": "chatgpt", "OPENAI_API_KEY": None,
                  "tokens": {"id_token": jwt(idt), "access_token": jwt(common), "refresh_token": "rt-capture", "account_id": acct},
                  "last_refresh": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
PY
}

# relay_block BASE WEBSOCKETS [LINE]: the provider block `codexrelay codex-config --write` writes
# (app/codex.go), with a fake local key, and LINE before the key; NAME is the provider's name
# (default "Codex Relay", the name the cases before compact-* were recorded with), TOP a line
# before the block.
relay_block() {
  [ -z "${TOP:-}" ] || printf '%s\n' "$TOP"
  cat <<EOF
model_provider = "codexrelay"

[model_providers.codexrelay]
name = "${NAME:-Codex Relay}"
base_url = "$1/v1"
wire_api = "responses"
model_catalog_url = "$1/v1/models"
supports_websockets = $2
EOF
  [ -z "${3:-}" ] || echo "$3"
  echo 'experimental_bearer_token = "sk-capture-local-key"'
}

# keep_config W DIR: the case's config.toml, its key redacted, beside its records.
keep_config() {
  sed "s/^experimental_bearer_token = .*/experimental_bearer_token = \"REDACTED\"/" "$1/home/.codex/config.toml" >"$2/config.toml"
}

# capture_up W DIR ARGS...: the capture server for a case, once it listens (its pid in $srv).
capture_up() {
  local w=$1 dir=$2
  shift 2
  "$work/capture" -listen "127.0.0.1:$port" -out "$dir" -catalog "$out/models-bundled.json" -redact "$w/home=/home/user" "$@" 2>"$w/capture.log" &
  srv=$!
  for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
}

# check_paths NAME DIR: warns of machine paths the redaction left in a case's records.
check_paths() {
  if grep -rlE "$work|/tmp/|/work/" "$2" >/dev/null; then
    echo "$1: WARNING: machine paths left in:"; grep -rlE "$work|/tmp/|/work/" "$2"
  fi
}

# run CASE MODEL WEBSOCKETS SCENARIO AUTH: one `codex exec` against a fresh capture server.
run() {
  local name=$1 model=$2 ws=$3 scenario=$4 auth=$5
  local w="$work/$name" dir="$out/$name"
  mkdir -p "$w/home/.codex" "$w/home/project"
  rm -rf "$dir" && mkdir -p "$dir"
  local base="http://127.0.0.1:$port" tls=() envs=()
  if [ "$auth" != key ] && [ "$auth" != key-chatgpt ]; then
    # Codex wants an HTTPS ChatGPT backend: a throw-away CA, which Codex trusts through
    # CODEX_CA_CERTIFICATE, signs a certificate for 127.0.0.1 (rustls refuses a CA as a leaf).
    base="https://127.0.0.1:$port"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=capture-ca -keyout "$w/ca.key" -out "$w/ca.pem" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$w/key.pem" -out "$w/cert.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$w/ext"
    openssl x509 -req -in "$w/cert.csr" -CA "$w/ca.pem" -CAkey "$w/ca.key" -CAcreateserial -days 2 -extfile "$w/ext" \
      -out "$w/cert.pem" 2>/dev/null
    tls=(-tls-cert "$w/cert.pem" -tls-key "$w/key.pem")
    envs=(CODEX_CA_CERTIFICATE="$w/ca.pem")
    # The built-in provider speaks WebSocket; chatgpt-http refuses the handshake (426), after which
    # Codex falls back to HTTP.
    [ "$auth" = chatgpt-http ] && tls+=(-refuse-websocket)
    # The built-in provider in ChatGPT mode, pointed at the capture server.
    {
      [ -z "${TOP:-}" ] || printf '%s\n' "$TOP"
      cat <<EOF
chatgpt_base_url = "$base/backend-api/"
openai_base_url = "$base/backend-api/codex"
EOF
    } >"$w/home/.codex/config.toml"
    chatgpt_auth 00000000-0000-4000-8000-00000000ca75 >"$w/home/.codex/auth.json"
  else
    relay_block "$base" "$ws" >"$w/home/.codex/config.toml"
    if [ "$auth" = key-chatgpt ]; then
      # The block as codex-config --write writes it since Codex Relay serves web search and
      # image generation, with Codex signed in with ChatGPT: Codex then offers the web and
      # image_gen namespaces and sends their calls to the provider, with the local key.
      cat >>"$w/home/.codex/config.toml" <<EOF
supports_standalone_web_search = true
requires_openai_auth = true
EOF
      chatgpt_auth 00000000-0000-4000-8000-00000000ca75 >"$w/home/.codex/auth.json"
      # An image in the project for image_gen's edit (1x1 PNG).
      base64 -d >"$w/home/project/red.png" <<<"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
    fi
  fi
  keep_config "$w" "$dir"
  local srv
  capture_up "$w" "$dir" -scenario "$scenario" "${tls[@]}"
  local rc=0
  (cd "$w/home/project" && env HOME="$w/home" CODEX_HOME="$w/home/.codex" LANG=en_US.UTF-8 \
    HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost "${envs[@]}" \
    timeout 120 "$codex" exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -m "$model" \
    "run echo hi and then say done" >"$w/codex.out" 2>"$w/codex.err") || rc=$?
  kill "$srv"; wait "$srv" 2>/dev/null || true
  echo "$name: codex exit $rc, answered '$(tail -n 1 "$w/codex.out" 2>/dev/null)', $(ls "$dir" | grep -c '^[0-9]') records"
  [ $rc = 0 ] || tail -n 5 "$w/codex.err"
  check_paths "$name" "$dir"
}

# tui_up: Codex's TUI (gpt-5.6-sol) in tmux session $sess, in W's throw-away home, beside the
# capture server; screen prints what it shows, waitfor TEXT SECONDS waits until it shows TEXT.
# tui_down keeps its screen (W/screen.txt), and stops it, the app-server daemon it leaves and
# the capture server ($srv).
tui_up() {
  tmux new-session -d -s "$sess" -x 160 -y 50 "cd '$w/home/project' && env HOME='$w/home' CODEX_HOME='$w/home/.codex' LANG=en_US.UTF-8 TERM=xterm-256color \
    HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost '$codex' -m gpt-5.6-sol; sleep 30"
}
screen() { tmux capture-pane -p -t "$sess" -S -100 2>/dev/null; }
waitfor() { for _ in $(seq $(($2 * 4))); do screen | grep -qF -- "$1" && return 0; sleep 0.25; done; return 1; }
tui_down() {
  screen | grep -v '^\s*$' >"$w/screen.txt" || true
  tmux kill-session -t "$sess" 2>/dev/null || true
  pkill -f "$w/home/.codex/packages/app-server-daemon" 2>/dev/null || true
  sleep 0.5; kill "$srv"; wait "$srv" 2>/dev/null || true
}

# interrupt NAME: Codex's TUI over a WebSocket (the block codex-config writes) against the capture
# server's slow scenario; Esc once the answer streams, then a second prompt on the same session.
interrupt() {
  local name=$1 w="$work/$1" dir="$out/$1" sess="capture-$$"
  mkdir -p "$w/home/.codex" "$w/home/project"
  rm -rf "$dir" && mkdir -p "$dir"
  local base="http://127.0.0.1:$port"
  relay_block "$base" true "supports_standalone_web_search = true" >"$w/home/.codex/config.toml"
  keep_config "$w" "$dir"
  printf '\n[projects."%s"]\ntrust_level = "trusted"\n' "$w/home/project" >>"$w/home/.codex/config.toml"
  local srv
  capture_up "$w" "$dir" -scenario slow -interrupt-answer "${INTERRUPT_ANSWER:-incomplete}"
  tui_up
  waitfor "Ask Codex" 60 || echo "$name: no prompt"
  tmux send-keys -t "$sess" "count slowly"; sleep 0.5; tmux send-keys -t "$sess" Enter
  # Codex 0.171 sends response.interrupt for a turn that has streamed a while; one Esc'd within a
  # few seconds it ends by closing the socket. The slow answer runs for a minute: Esc at 15 s.
  sleep 15
  tmux send-keys -t "$sess" Escape
  waitfor "interrupted" 15 || echo "$name: Codex did not say the turn was interrupted"
  tui_down
  echo "$name: $(ls "$dir" | grep -c '^[0-9]') records; the capture server saw: $(grep -E 'interrupted after|socket read' "$w/capture.log" | sed 's/^[0-9/]* [0-9:]* //' | tr '\n' ';')"
  check_paths "$name" "$dir"
}

# compact_manual NAME: Codex's TUI over a WebSocket (the block with the name "OpenAI") against the
# capture server's compact scenario: a turn, /compact, and a turn after it.
compact_manual() {
  local name=$1 w="$work/$1" dir="$out/$1" sess="capture-$$"
  mkdir -p "$w/home/.codex" "$w/home/project"
  rm -rf "$dir" && mkdir -p "$dir"
  NAME=OpenAI relay_block "http://127.0.0.1:$port" true "supports_standalone_web_search = true" >"$w/home/.codex/config.toml"
  keep_config "$w" "$dir"
  # The project trusted, and the notice of the model's successor read: unread, Codex shows it at
  # start and takes the first Enter as its answer.
  printf '\n[projects."%s"]\ntrust_level = "trusted"\n\n[notice.model_migrations]\n"gpt-5.6-sol" = "gpt-6-sol"\n' "$w/home/project" \
    >>"$w/home/.codex/config.toml"
  local srv
  capture_up "$w" "$dir" -scenario compact
  tui_up
  say() { tmux send-keys -t "$sess" "$1"; sleep 1; tmux send-keys -t "$sess" Enter; }
  waitfor "Ask Codex" 60 || echo "$name: no prompt"
  sleep 2 # the prompt shows a moment before it takes input
  say "run echo hi and then say done"
  waitfor "Worked for" 30 || echo "$name: the turn did not end"
  say "/compact"
  waitfor "Context compacted" 30 || echo "$name: Codex did not say the context was compacted"
  say "what did the tool print?"
  sleep 5
  tui_down
  echo "$name: $(ls "$dir" | grep -c '^[0-9]') records; Codex said 'Context compacted' $(grep -c 'Context compacted' "$w/screen.txt") time(s)"
  check_paths "$name" "$dir"
}

# The compaction cases: Codex compacts once its usage passes the limit (the capture server
# reports 1240 tokens until a compaction, then 200).
limit='model_auto_compact_token_limit = 1000'

for c in "${cases[@]}"; do
  case $c in
  http-lite) run "$c" gpt-5.6-sol false tool key ;;
  ws-lite) run "$c" gpt-5.6-sol true tool key ;;
  http-nonlite) run "$c" gpt-5.5 false tool key ;;
  ws-nonlite) run "$c" gpt-5.5 true tool key ;;
  multiagent) run "$c" gpt-5.6-sol false spawn key ;;
  chatgpt-ws) run "$c" gpt-5.6-sol true tool chatgpt ;;
  chatgpt-http) run "$c" gpt-5.6-sol false tool chatgpt-http ;;
  web) run "$c" gpt-5.6-sol false web key-chatgpt ;;
  ws-interrupt) interrupt "$c" ;;
  compact-local) TOP=$limit run "$c" gpt-5.6-sol false compact key ;;
  compact-remote) TOP=$limit NAME=OpenAI run "$c" gpt-5.6-sol false compact key ;;
  compact-ws) TOP=$limit NAME=OpenAI run "$c" gpt-5.6-sol true compact key ;;
  compact-chatgpt) TOP=$limit run "$c" gpt-5.6-sol true compact chatgpt ;;
  compact-manual) compact_manual "$c" ;;
  *) echo "unknown case $c" >&2; exit 2 ;;
  esac
done
