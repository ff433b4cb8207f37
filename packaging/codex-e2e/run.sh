#!/usr/bin/env bash
# make codex-e2e: the real Codex CLI (npm @openai/codex, pinned) through `codexrelay serve` with two
# ChatGPT accounts on a fake ChatGPT backend (fake/), running gpt-5.6-sol's tool loop (Responses
# Lite: the tools in an additional_tools input item, the Lite marker) across a rotation, over
# these paths:
#
#   http              Codex over HTTP (supports_websockets = false) -> relay -> backend over HTTP
#   socket-over-http  Codex over WebSocket -> relay -> a backend that refuses the upgrade (404):
#                     the relay serves the turns over HTTP
#   socket            Codex over WebSocket -> relay -> backend over WebSocket
#   web               Codex signed in with ChatGPT, over HTTP: A's tool call is code mode's
#                     script calling web.run and image_gen.imagegen (a generation, an edit), which
#                     Codex posts to the relay itself; the search meets A's limit and moves to B
#   status            Codex's TUI (under tmux), signed in with ChatGPT: after the turn, /status
#                     shows the pool's limits, read from the relay over HTTPS (status_path)
#   esc               Codex's TUI over a WebSocket, Esc mid-turn: the account's request ends
#                     within 1 s (esc_path)
#   compact           Codex over a WebSocket compacts on A (remotely: the provider named
#                     "OpenAI"), A reaches its limit, and B, on which the relay re-makes the
#                     compaction, still knows what the tool printed before it (compact_path)
#   compact-restart   as compact, but A compacts and finishes the turn, the relay is restarted
#                     (the same compactions/ folder), A reaches its limit, and `codex exec
#                     resume --last` asks what the tool printed: B re-makes the compaction from
#                     the request kept on disk, without A's sealed reasoning in it, and the
#                     turn leaves out the reasoning A sealed after its compaction, though the
#                     restarted relay never saw A seal it (compact_restart_path)
#
# In each, account A answers the turn with its sealed reasoning and a call of code mode's exec
# tool (JavaScript running `echo hi`), then 429 usage_limit_reached; the request after the tool
# moves to B without A's sealed reasoning, and Codex finishes with B's answer "done". The fake
# backend answers a request that carries additional_tools without the Lite marker as a model
# with no tools, and refuses foreign sealed content and outputs without their calls, so that a
# relay that gets any of it wrong fails here. Checks per path: Codex's final answer, who served
# the turns, the sealed parts left out and those of A that reached B, the Lite marker on every
# request that carried additional_tools, that the tool ran (its output reached the backend), the
# traces' responsesLite, the upstream transport, turn states and refusals.
# Runs inside its own keyring session (.ci/with-keyring) and throw-away homes; loopback only.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
bin=$1 # the codexrelay binary
case $bin in /*) ;; *) bin="$top/$bin" ;; esac
codex_version=${CODEX_VERSION:-0.171.0}
model=gpt-5.6-sol
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; pkill -f "$work/" 2>/dev/null || true; [ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT
cli="$top/bin/codex-cli-$codex_version"
if [ ! -x "$cli/node_modules/.bin/codex" ]; then
  mkdir -p "$cli" && (cd "$cli" && npm install --silent --no-audit --no-fund "@openai/codex@$codex_version" >/dev/null)
fi
(cd "$top" && go build -o "$work/fake" ./packaging/codex-e2e/fake)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# chatgpt_auth ACCOUNT_ID EMAIL: a ChatGPT-mode Codex auth.json whose tokens are unsigned JWTs that
# expire in 2100 (nothing refreshes them; the issuer is the fake anyway).
chatgpt_auth() {
  python3 - "$1" "$2" <<'PY'
import base64, json, sys, time
acct, email = sys.argv[1], sys.argv[2]
b = lambda o: base64.urlsafe_b64encode(json.dumps(o, separators=(",", ":")).encode()).rstrip(b"=").decode()
jwt = lambda claims: b({"alg": "none", "typ": "JWT"}) + "." + b(claims) + ".c2ln"
auth = {"chatgpt_account_id": acct, "chatgpt_plan_type": "pro", "chatgpt_user_id": "user-" + acct[-2:], "user_id": "user-" + acct[-2:]}
common = {"exp": 4102444800, "iat": 1764460800, "sub": "auth0|e2e-" + acct[-2:], "https://api.openai.com/auth": auth}
idt = dict(common, email=email, email_verified=True)
print(json.dumps({"auth_mode": "chatgpt", "OPENAI_API_KEY": None,
                  "tokens": {"id_token": jwt(idt), "access_token": jwt(common), "refresh_token": "rt-e2e-" + acct[-2:], "account_id": acct},
                  "last_refresh": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
PY
}

# The fake's own refusals, checked once against it directly, so that a relay that gets them wrong
# cannot pass: without the Lite marker the model has no tools; the marker on a model that is not
# Lite, another account's sealed content, an output without its call and another account's token
# are refused.
selfcheck() {
  local w="$work/selfcheck"
  mkdir -p "$w"
  local pa pb; pa=$(port) pb=$(port)
  "$work/fake" "$pa" "$pb" "$w/logs" 2>"$w/fake.log" &
  local fake=$!
  for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$pb/" && break; sleep 0.1; done
  local a=00000000-0000-4000-8000-0000000000aa b=00000000-0000-4000-8000-0000000000bb
  chatgpt_auth $a a@e2e.test >"$w/auth-a.json"
  chatgpt_auth $b b@e2e.test >"$w/auth-b.json"
  local ta tb
  ta=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens"]["access_token"])' "$w/auth-a.json")
  tb=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens"]["access_token"])' "$w/auth-b.json")
  post() { # PORT TOKEN ACCOUNT_ID MODEL plain|lite INPUT -> "status body"
    local hdr=()
    [ "$5" = lite ] && hdr=(-H 'x-openai-internal-codex-responses-lite: true')
    curl -s -o "$w/out" -w '%{http_code}' "http://127.0.0.1:$1/backend-api/codex/responses" -H "authorization: Bearer $2" \
      -H "chatgpt-account-id: $3" -H 'content-type: application/json' "${hdr[@]}" \
      -d "{\"model\":\"$4\",\"stream\":true,\"store\":false,\"input\":$6}"
    printf ' '; tr -d '\n' <"$w/out"
  }
  local tools='{"type":"additional_tools","role":"developer","tools":[{"type":"namespace","name":"functions","tools":[{"type":"custom","name":"exec"}]}]}'
  local r ok=1
  r=$(post $pa "$ta" $a gpt-5.6-sol lite "[$tools]"); [[ $r == 200* && $r == *custom_tool_call* ]] || { ok=0; echo "fake: marker: $r"; }
  r=$(post $pb "$tb" $b gpt-5.6-sol plain "[$tools]"); [[ $r == 200* && $r == *"no shell tool"* ]] || { ok=0; echo "fake: no marker: $r"; }
  r=$(post $pb "$tb" $b gpt-5.5 lite '[]'); [[ $r == 400*"not supported when using X-OpenAI-Internal-Codex-Responses-Lite"* ]] || { ok=0; echo "fake: marker on gpt-5.5: $r"; }
  r=$(post $pb "$tb" $b gpt-5.6-sol lite '[{"type":"reasoning","summary":[],"encrypted_content":"gAAAABA-x=="}]'); [[ $r == 400*invalid_request_body* ]] || { ok=0; echo "fake: foreign sealed: $r"; }
  r=$(post $pb "$tb" $b gpt-5.6-sol lite '[{"type":"custom_tool_call_output","call_id":"call_x","output":"hi"}]'); [[ $r == 400*"No tool call found"* ]] || { ok=0; echo "fake: orphan output: $r"; }
  r=$(post $pb "$ta" $a gpt-5.6-sol lite '[]'); [[ $r == 401* ]] || { ok=0; echo "fake: other account: $r"; }
  kill "$fake"; wait "$fake" 2>/dev/null || true
  if [ $ok = 1 ]; then
    echo "fake: marker -> tool call; no marker -> no tools; marker on gpt-5.5, foreign sealed content, output without its call -> 400; other account's token -> 401"
  else
    echo "fake: self-check FAILED"; exit 1
  fi
}
selfcheck

# relay_up W FAKEFLAGS...: the fake backend (accounts A and B) and `codexrelay serve` with both
# accounts, the local key, and the Codex configuration codex-config writes (the project trusted;
# with SIGNED_IN set, Codex signed in with ChatGPT first), in throw-away homes under W; sets w pa
# pb pr logs fake relay key. relay_start starts `codexrelay serve` alone (again, after a stop),
# its log appended to W/relay.log.
relay_up() {
  w=$1; shift
  pa=$(port) pb=$(port) pr=$(port)
  logs="$w/logs"; mkdir -p "$logs"
  "$work/fake" "$@" "$pa" "$pb" "$logs" 2>"$w/fake.log" &
  fake=$!
  # XDG_DATA_HOME too: the relay keeps its usage database and compactions/ there, and the one
  # .ci/with-keyring sets would be shared by every path.
  export HOME="$w/home" XDG_CONFIG_HOME="$w/config" XDG_DATA_HOME="$w/data" CODEX_HOME="$w/codex"
  mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$CODEX_HOME" "$w/cwd"
  unset CODEXRELAY_API_KEY OPENAI_API_KEY CODEXRELAY_LISTEN
  export LANG=en_US.UTF-8
  # No ChatGPT call may leave the machine: the default base URL and the OAuth issuer are the fake's.
  export CODEXRELAY_CHATGPT_BASE_URL="http://127.0.0.1:$pa/backend-api/codex" CODEXRELAY_AUTH_ISSUER="http://127.0.0.1:$pa"
  "$bin" settings set listen "127.0.0.1:$pr" >/dev/null
  # The paths rotate from A, listed first, to B: list order (a new install spends the quota that
  # resets soonest first, which the fake's windows do not model).
  "$bin" settings set strategy priority >/dev/null
  chatgpt_auth 00000000-0000-4000-8000-0000000000aa a@e2e.test >"$w/auth-a.json"
  chatgpt_auth 00000000-0000-4000-8000-0000000000bb b@e2e.test >"$w/auth-b.json"
  "$bin" accounts import-codex --path "$w/auth-a.json" >/dev/null
  "$bin" accounts import-codex --path "$w/auth-b.json" >/dev/null
  "$bin" accounts rename a@e2e.test a >/dev/null
  "$bin" accounts rename b@e2e.test b >/dev/null
  # An imported ChatGPT account takes the default base URL, and no command gives one its own:
  # each account's base_url goes into the settings file (what `accounts add --base-url` stores).
  python3 - "$XDG_CONFIG_HOME/codexrelay/settings.json" "$pa" "$pb" <<'PY'
import json, os, sys
f, pa, pb = sys.argv[1], sys.argv[2], sys.argv[3]
s = json.load(open(f))
for a in s["accounts"]:
    a["base_url"] = "http://127.0.0.1:%s/backend-api/codex" % {"a": pa, "b": pb}[a["name"]]
tmp = f + ".tmp"
with open(tmp, "w") as o:
    json.dump(s, o, indent=2)
os.chmod(tmp, 0o600)
os.replace(tmp, f)
PY
  "$bin" local-key on >/dev/null
  key=$("$bin" local-key show | tail -n 1)
  # Signed in, Codex is given the features of its own sign-in (codex-config reads auth.json).
  [ -n "${SIGNED_IN:-}" ] && chatgpt_auth 00000000-0000-4000-8000-0000000000cc you@e2e.test >"$CODEX_HOME/auth.json"
  "$bin" codex-config --write >"$w/codex-config.out"
  printf '\n[projects."%s"]\ntrust_level = "trusted"\n' "$w/cwd" >>"$CODEX_HOME/config.toml"
  relay_start
}
relay_start() {
  "$bin" serve --listen "127.0.0.1:$pr" 2>>"$w/relay.log" &
  relay=$!
  for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$pr/health" && break; sleep 0.1; done
}

# codex_exec PROMPT: `codex exec` in W's working folder, its answer in W/codex.out; Codex's calls
# elsewhere (a signed-in Codex's plugin sync and telemetry) go to a closed local port: nothing
# leaves the machine. Then the relay's traces are kept (W/traces.json), the relay and the fake
# stop, and leaked counts what of A's sealed parts reached B. codex_run OUT [resume --last]
# PROMPT is the run alone (W/OUT.out, W/OUT.err), `codex exec resume --last` with resume.
codex_exec() {
  codex_run codex "$1"
  curl -s -H "Authorization: Bearer $key" "http://127.0.0.1:$pr/relay/traces?limit=50" >"$w/traces.json" || true
  kill "$relay" "$fake"; wait "$relay" "$fake" 2>/dev/null || true
  leaked=$(cat "$logs"/B-* 2>/dev/null | grep -c 'gAAAABA' || true)
}
codex_run() {
  local out=$1; shift
  local sub=()
  [ "$1" = resume ] && { sub=(resume --last); shift; }
  (cd "$w/cwd" && HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost \
    timeout 180 "$cli/node_modules/.bin/codex" exec "${sub[@]}" --skip-git-repo-check \
    --dangerously-bypass-approvals-and-sandbox -m "$model" "$1" >"$w/$out.out" 2>"$w/$out.err") || true
}

# E2E_ONLY="compact esc" runs only the paths named.
runs() { [ -z "${E2E_ONLY:-}" ] || [[ " $E2E_ONLY " == *" $1 "* ]]; }

fail=0
for path in http socket-over-http socket web; do
  runs "$path" || continue
  fakeflags=()
  [ "$path" = socket-over-http ] && fakeflags=(-refuse-websocket)
  [ "$path" = web ] && fakeflags=(-web)
  # web: Codex signed in with ChatGPT (an account of its own, not one of the relay's), before
  # the configuration is written: with the block codex-config then writes, it offers web.run and
  # image_gen and sends their calls to the relay with the local key.
  signed=""
  [ "$path" = web ] && signed=1
  SIGNED_IN=$signed relay_up "$work/$path" "${fakeflags[@]}"
  [ "$path" = http ] || [ "$path" = web ] && sed -i 's/supports_websockets = true/supports_websockets = false/' "$CODEX_HOME/config.toml"
  if [ "$path" = web ]; then
    base64 -d >"$w/cwd/red.png" <<<"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
  fi
  codex_exec "run echo hi, then say done"
  answer=$(tail -n 1 "$w/codex.out" 2>/dev/null || true)
  if python3 - "$path" "$answer" "$leaked" "$w/traces.json" "$logs/requests.jsonl" "$logs/backend.jsonl" <<'PY'
import json, re, sys
path, answer, leaked, traces_f, reqs_f, backend_f = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
try:
    traces = list(reversed(json.load(open(traces_f))))
except Exception:
    traces = []
reqs = []
try:
    reqs = [json.loads(l) for l in open(reqs_f) if l.strip()]
except FileNotFoundError:
    pass
turns = [t for t in traces if t.get("route") not in ("models", "chatgpt")]
served = " ".join(t.get("account") or "-" for t in turns)
omitted = sum(t.get("sealedOmitted", 0) for t in turns)
lite = sorted({t.get("responsesLite") or "-" for t in turns})
with_tools = [r for r in reqs if r["additional_tools"]]
marked = [r for r in with_tools if r["marker"]]
no_tools = [r for r in reqs if r["answer"] == "no_tools"]
ran = any(re.search(r"(?<![A-Za-z])hi(?![A-Za-z])", r.get("tool_output", "")) for r in reqs)
transports = " ".join("%s:%s" % (r["account"], r["transport"]) for r in reqs)
want_transport = "ws" if path == "socket" else "http"
wrong_transport = [r for r in reqs if r["transport"] != want_transport]
foreign_state = sum(1 for r in reqs if r.get("foreign_turn_state"))
refused = [r for r in reqs if r["status"] not in (200, 429)]
b_served = any(r["account"] == "B" and r["status"] == 200 and r["answer"] == "done" for r in reqs)
print("%s: codex answered '%s'; turns served by: %s; sealed parts left out: %d; A's sealed parts B received: %d; "
      "additional_tools requests with the Lite marker: %d/%d; tool ran: %s; responsesLite: %s; upstream: %s; "
      "foreign turn states: %d; refused: %d" % (path, answer, served, omitted, leaked, len(marked), len(with_tools),
      "yes" if ran else "no", ",".join(lite), transports, foreign_state, len(refused)))
problems = []
if answer != "done": problems.append("Codex did not answer 'done'")
if omitted < 1: problems.append("no sealed part left out")
if leaked != 0: problems.append("B received A's sealed parts")
if not with_tools or len(marked) != len(with_tools): problems.append("additional_tools without the Lite marker")
if no_tools: problems.append("%d answer(s) as a model without tools" % len(no_tools))
if not ran: problems.append("the tool's output never reached the backend")
if "lite" not in lite or "classic" in lite: problems.append("responsesLite is not 'lite'")
if wrong_transport: problems.append("upstream requests not over %s" % want_transport)
if foreign_state: problems.append("turn state sent to an account that did not issue it")
if refused:
    problems.append("upstream refusals: " + "; ".join("%s#%d %d %s" % (r["account"], r["seq"], r["status"], r["answer"]) for r in refused))
if not b_served: problems.append("B never served the turn")
if path == "web":
    # web.run and image_gen through the relay across the rotation: A is at its limit after its
    # turn, so the search moves to B before any byte reached Codex; B serves both image calls;
    # what they answered is in the tool output B's next turn carries.
    try:
        calls = [json.loads(l) for l in open(backend_f) if l.strip()]
    except FileNotFoundError:
        calls = []
    said = " ".join("%s:%s:%s" % (c["account"], c["call"], c["status"]) for c in calls)
    searches = [t for t in traces if t.get("route") == "search"]
    images = [t for t in traces if t.get("route") == "images"]
    attempts = " ".join("/".join("%s:%s" % (a["account"], a["status"]) for a in t.get("attempts", [])) for t in searches + images)
    out = " ".join(r.get("tool_output", "") for r in reqs if r["account"] == "B")
    print("web: backend calls upstream: %s; relay traces (search, images): %s; B's turn got the search: %s, images: %d" % (
        said, attempts, "yes" if "search results from B" in out else "no", out.count("Generated images are saved")))
    if not any(c["account"] == "A" and c["call"] == "alpha/search" and c["status"] == 429 for c in calls): problems.append("the search never met A's limit")
    if not any(c["account"] == "B" and c["call"] == "alpha/search" and c["status"] == 200 for c in calls): problems.append("B never served the search")
    if sorted(c["call"] for c in calls if c["account"] == "B" and c["status"] == 200 and c["call"].startswith("images/")) != ["images/edits", "images/generations"]:
        problems.append("B did not serve the image generation and the edit")
    if not searches or searches[0].get("account") != "b" or [a["account"] for a in searches[0].get("attempts", [])] != ["a", "b"]:
        problems.append("the search's trace does not show the rotation a -> b")
    if "search results from B" not in out: problems.append("the search result never reached the model")
    if out.count("Generated images are saved") != 2: problems.append("the two images never reached the model")
for p in problems: print("  FAIL: " + p)
sys.exit(1 if problems else 0)
PY
  then :; else
    fail=1
    echo "--- codex stderr"; tail -n 20 "$w/codex.err"; echo "--- relay log"; tail -n 20 "$w/relay.log"
    echo "--- fake log"; tail -n 30 "$w/fake.log"
  fi
done
# status: Codex's TUI, signed in with ChatGPT, with the configuration codex-config writes: its
# ChatGPT origin is the relay over HTTPS (a loopback authority Codex trusts through .env), so
# /status shows the pool's limits over the user's own usage. A (a weekly-only plan: one window,
# 12% of the week) serves the turn's tool call and meets its limit; B (34% of five hours, 17% of
# the week, and a limit of its own for GPT-5.3-Codex-Spark, 50%) finishes. /status then shows
# what the accounts that can serve have left, B alone: 66% of five hours, 83% of the week, 50% of
# Spark's five hours; and the user's own credits (12.50, shown as 13), which no pool account
# has. The relay answered the usage itself (its trace names the accounts it counted).

# tui SESSION: Codex's TUI in tmux, in W's throw-away home; wait_for TEXT SECONDS waits until its
# screen (saved in $pane) shows TEXT.
tui() {
  sess=$1 pane="$w/pane.txt"
  tmux new-session -d -s "$sess" -x 160 -y 50 "cd '$w/cwd' && env HOME='$HOME' CODEX_HOME='$CODEX_HOME' LANG=en_US.UTF-8 TERM=xterm-256color \\
    HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost \\
    '$cli/node_modules/.bin/codex' -m $model 2>'$w/codex.err'; sleep 30"
}
wait_for() {
  local i
  for i in $(seq $(($2 * 4))); do
    tmux capture-pane -p -t "$sess" -S -200 >"$pane" 2>/dev/null || true
    grep -qF -- "$1" "$pane" && return 0
    sleep 0.25
  done
  return 1
}
# tui_down: the TUI's session and the app-server daemon it leaves under CODEX_HOME.
tui_down() {
  tmux kill-session -t "$sess" 2>/dev/null || true
  pkill -f "$CODEX_HOME/packages/app-server-daemon" 2>/dev/null || true
}

status_path() {
  SIGNED_IN=1 relay_up "$work/status"
  sed -i 's/supports_websockets = true/supports_websockets = false/' "$CODEX_HOME/config.toml"
  tui "codexrelay-e2e-$$"
  local ok=1 stage=start
  wait_for "Ask Codex" 60 || { ok=0; stage="the TUI never offered a prompt"; }
  if [ $ok = 1 ]; then
    tmux send-keys -t "$sess" "run echo hi, then say done"; sleep 0.5; tmux send-keys -t "$sess" Enter
    wait_for "• done" 90 || { ok=0; stage="the turn never finished"; }
  fi
  if [ $ok = 1 ]; then
    tmux send-keys -t "$sess" "/status"; sleep 1; tmux send-keys -t "$sess" Enter
    wait_for "limit" 30 || { ok=0; stage="/status showed no limits"; }
    sleep 1; tmux capture-pane -p -t "$sess" -S -200 >"$pane"
  fi
  tui_down
  curl -s -H "Authorization: Bearer $key" "http://127.0.0.1:$pr/relay/traces?limit=200" >"$w/traces.json" || true
  kill "$relay" "$fake"; wait "$relay" "$fake" 2>/dev/null || true
  if python3 - "$ok" "$stage" "$pane" "$w/traces.json" "$w/codex-config.out" <<'PY'
import json, re, sys
ok, stage, pane_f, traces_f, cfg_f = sys.argv[1] == "1", sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
try:
    pane = open(pane_f).read()
except FileNotFoundError:
    pane = ""
traces = list(reversed(json.load(open(traces_f)))) if open(traces_f).read().strip().startswith("[") else []
usage = [t for t in traces if t.get("route") == "chatgpt" and t.get("path") == "/backend-api/wham/usage"]
turns = " ".join(t.get("account") or "-" for t in traces if t.get("route") == "responses")
limits = [l.strip() for l in pane.splitlines() if re.search(r"limit", l, re.I)]
print("status: turns served by: %s; usage reads answered by the relay for: %s; /status shows: %s" % (
    turns, " ".join(t.get("account") or "(passed through)" for t in usage), " | ".join(limits) or "-"))
print("status: codex-config said: " + open(cfg_f).read().strip().splitlines()[-1])
problems = [] if ok else [stage]
if not usage or not all(set((t.get("account") or "").split(",")) <= {"a", "b"} and t.get("account") for t in usage):
    problems.append("Codex's usage reads were not answered with the pool's")
want = {"5h limit": "66% left", "Weekly limit": "83% left", "GPT-5.3-Codex-Spark 5h limit": "50% left"}
for label, left in want.items():
    if not any(l.startswith(label + ":") and left in l for l in limits):
        problems.append("/status does not show the pool's %s as %s after A's limit" % (label, left))
if not re.search(r"Credits:\s+13 credits", pane): problems.append("/status does not show the user's own credits (13)")
for p in problems: print("  FAIL: " + p)
sys.exit(1 if problems else 0)
PY
  then :; else
    fail=1
    echo "--- screen"; tail -n 40 "$pane" 2>/dev/null; echo "--- codex stderr"; tail -n 10 "$w/codex.err"; echo "--- relay log"; tail -n 20 "$w/relay.log"
  fi
}
runs status && status_path

# esc: Codex's TUI over a WebSocket (the configuration as written), A's backend streaming its
# answer a word every 200 ms (over HTTP: the fake refuses the upgrade). Esc once the turn has
# streamed for 16 s (Codex then sends response.interrupt; sooner it closes its socket); the
# fake notes when the relay ended its request. Checks: the upstream stopped within 1 s of the
# Esc, Codex says the turn was interrupted, and the next turn is served.
esc_path() {
  relay_up "$work/esc" -slow -refuse-websocket
  tui "codexrelay-e2e-esc-$$"
  local ok=1 stage=start t0 t1 ms=-1
  wait_for "Ask Codex" 60 || { ok=0; stage="the TUI never offered a prompt"; }
  if [ $ok = 1 ]; then
    # A Codex never signed in opens on a notice of the model it moved to, which takes the first
    # prompt: the prompt is typed again until the turn starts.
    for _ in 1 2 3; do
      tmux send-keys -t "$sess" "count slowly"; sleep 0.5; tmux send-keys -t "$sess" Enter
      for _ in $(seq 32); do grep -q '"answer":"slow"' "$logs/requests.jsonl" 2>/dev/null && break 2; sleep 0.25; done
    done
    sleep 16
    t0=$(date +%s%N)
    tmux send-keys -t "$sess" Escape
    for _ in $(seq 100); do [ -s "$logs/cancelled" ] && break; sleep 0.05; done
    if [ -s "$logs/cancelled" ]; then t1=$(cat "$logs/cancelled"); ms=$(( (t1 - t0) / 1000000 )); else ok=0; stage="the upstream never saw its request end"; fi
    wait_for "interrupted" 15 || { ok=0; stage="Codex did not say the turn was interrupted"; }
  fi
  tui_down
  curl -s -H "Authorization: Bearer $key" "http://127.0.0.1:$pr/relay/traces?limit=50" >"$w/traces.json" || true
  kill "$relay" "$fake"; wait "$relay" "$fake" 2>/dev/null || true
  if python3 - "$ok" "$stage" "$ms" "$w/traces.json" <<'PY'
import json, sys
ok, stage, ms, traces_f = sys.argv[1] == "1", sys.argv[2], int(sys.argv[3]), sys.argv[4]
try:
    traces = list(reversed(json.load(open(traces_f))))
except Exception:
    traces = []
turns = [t for t in traces if t.get("route") == "responses"]
ended = " ".join("%s:%s%s" % (t.get("account") or "-", t.get("outcome"), " (%s)" % t["error"] if t.get("error") else "") for t in turns)
print("esc: the upstream saw the turn end %d ms after Esc; relay turns: %s" % (ms, ended))
problems = [] if ok else [stage]
if not 0 <= ms <= 1000: problems.append("the upstream did not stop within 1 s of Esc")
for p in problems: print("  FAIL: " + p)
sys.exit(1 if problems else 0)
PY
  then :; else
    fail=1
    echo "--- screen"; tail -n 20 "$pane" 2>/dev/null; echo "--- relay log"; tail -n 20 "$w/relay.log"; echo "--- fake log"; tail -n 10 "$w/fake.log"
  fi
}
runs esc && esc_path

# compact: Codex over a WebSocket with the block codex-config writes (the provider named
# "OpenAI": Codex compacts remotely) and a compaction limit of 1000 tokens. A's tool call prints
# FACT-7Q2 and reports 1240 tokens, so Codex compacts on A before it sends the output on; A then
# reaches its limit. The new window carries A's sealed compaction, which B cannot read: the relay
# re-makes it on B from the request that produced it, and B's answer still knows what the tool
# printed, though the tool's output is no longer in what Codex sends (only the compaction
# stands for it). Checks: Codex's answer names FACT-7Q2, A made the compaction, B re-made it and
# never received A's sealed parts, and the trace says the compaction was re-made on b.
compact_path() {
  relay_up "$work/compact" -compact
  sed -i '1i model_auto_compact_token_limit = 1000' "$CODEX_HOME/config.toml"
  codex_exec "run the tool, then say done and what it printed"
  if python3 - "$(tail -n 1 "$w/codex.out" 2>/dev/null)" "$leaked" "$w/traces.json" "$logs/requests.jsonl" "$CODEX_HOME/config.toml" <<'PY'
import json, sys
answer, leaked, traces_f, reqs_f, cfg_f = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
try:
    traces = list(reversed(json.load(open(traces_f))))
except Exception:
    traces = []
reqs = [json.loads(l) for l in open(reqs_f) if l.strip()]
turns = [t for t in traces if t.get("route") == "responses"]
said = " ".join("%s:%s" % (r["account"], r["answer"]) for r in reqs if not r.get("warmup"))
remade = [t for t in turns if t.get("compactionRemade")]
kinds = " ".join("/".join("%s%s" % (a["account"], ":" + a["kind"] if a.get("kind") else "") for a in t.get("attempts", [])) for t in turns)
named = 'name = "OpenAI"' in open(cfg_f).read()
print("compact: codex answered '%s'; the backend answered: %s; relay attempts per turn: %s; turns with the compaction re-made: %s; "
      "A's sealed parts B received: %d; provider named OpenAI: %s" % (answer, said, kinds,
      " ".join(t.get("account") or "-" for t in remade) or "none", leaked, "yes" if named else "no"))
problems = []
if "FACT-7Q2" not in answer: problems.append("Codex's answer forgot what the tool printed before the compaction")
if not named: problems.append("codex-config did not name the provider OpenAI")
if not any(r["account"] == "A" and r["answer"] == "compaction" for r in reqs): problems.append("A never compacted")
if not any(r["account"] == "B" and r["answer"] == "compaction" for r in reqs): problems.append("B never re-made the compaction")
if leaked: problems.append("B received A's sealed parts")
if not remade or remade[0].get("account") != "b": problems.append("no trace of the compaction re-made on b")
for p in problems: print("  FAIL: " + p)
sys.exit(1 if problems else 0)
PY
  then :; else
    fail=1
    echo "--- codex stderr"; tail -n 20 "$w/codex.err"; echo "--- relay log"; tail -n 20 "$w/relay.log"; echo "--- fake log"; tail -n 30 "$w/fake.log"
  fi
}
runs compact && compact_path

# compact-restart: as compact, but the compaction outlives the relay process. Codex compacts on A
# (remotely, the tool's FACT-7Q2 folded into A's sealed compaction) and A finishes the turn from
# its own compaction; then the relay is stopped and started again on the same settings and data
# folders (so the same compactions/ folder), A reaches its limit (the fake's POST /e2e/limit: 429
# usage_limit_reached from then on), and `codex exec resume --last` asks what the tool printed.
# The relay now knows nothing of who sealed what but what compactions/ kept: it re-makes A's
# compaction on B from the kept request, which still holds A's sealed reasoning, to be left out.
# The turn itself carries the reasoning A sealed after its compaction, whose sealer the restarted
# relay never saw: in a conversation A compacted it is left out for B (proxy/sealed.go
# unknownFor), never sent to be refused. Checks: Codex's second answer names FACT-7Q2, A made the
# compaction and served the first run alone, the relay kept the compaction on disk and was
# restarted, B re-made the compaction, no request to B (the re-making, the turn, a refused one)
# carried A's sealed parts, and the restarted relay's trace says it re-made the compaction on b.
compact_restart_path() {
  relay_up "$work/compact-restart" -compact -limit-on-demand
  sed -i '1i model_auto_compact_token_limit = 1000' "$CODEX_HOME/config.toml"
  codex_run first "run the tool, then say done and what it printed"
  local before; before=$(wc -l <"$logs/requests.jsonl" 2>/dev/null || echo 0)
  local kept; kept=$(find "$XDG_DATA_HOME/codexrelay/compactions" -type f ! -name seal.key 2>/dev/null | wc -l)
  local old=$relay
  kill "$relay"; wait "$relay" 2>/dev/null || true
  curl -s -o /dev/null -X POST "http://127.0.0.1:$pa/e2e/limit"
  relay_start
  local up=no; curl -sf -o /dev/null "http://127.0.0.1:$pr/health" && [ "$relay" != "$old" ] && up=yes
  codex_run codex resume "what did the tool print?"
  curl -s -H "Authorization: Bearer $key" "http://127.0.0.1:$pr/relay/traces?limit=50" >"$w/traces.json" || true
  kill "$relay" "$fake"; wait "$relay" "$fake" 2>/dev/null || true
  if python3 - "$(tail -n 1 "$w/first.out" 2>/dev/null)" "$(tail -n 1 "$w/codex.out" 2>/dev/null)" "$before" "$kept" "$up" \
    "$w/traces.json" "$logs/requests.jsonl" "$logs" <<'PY'
import json, os, sys
first, answer, before, kept, up, traces_f, reqs_f, logs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7], sys.argv[8]
try:
    traces = list(reversed(json.load(open(traces_f))))
except Exception:
    traces = []
reqs = [json.loads(l) for l in open(reqs_f) if l.strip()]
pre, post = [r for r in reqs[:before] if not r.get("warmup")], [r for r in reqs[before:] if not r.get("warmup")]
turns = [t for t in traces if t.get("route") == "responses"]
said = lambda rs: " ".join("%s:%s" % (r["account"], r["answer"]) for r in rs) or "-"
remade = [t for t in turns if t.get("compactionRemade")]
kinds = " ".join("/".join("%s%s" % (a["account"], ":" + a["kind"] if a.get("kind") else "") for a in t.get("attempts", [])) for t in turns)
def sent(r): # what the account received for request r: its logged body or frame
    for name in ("%s-%03d-body.json", "%s-%03d-ws-frame.json"):
        f = os.path.join(logs, name % (r["account"], r["seq"]))
        if os.path.exists(f):
            return open(f).read()
    return ""
def carried(r): return sent(r).count("gAAAABA") # A's sealed parts in it
def compacting(r): # its input ends with the compaction trigger: a compaction (re-)made
    try:
        return (json.loads(sent(r)).get("input") or [{}])[-1].get("type") == "compaction_trigger"
    except (ValueError, AttributeError):
        return False
b_post = [r for r in post if r["account"] == "B"]
remake_leaks = sum(carried(r) for r in b_post if compacting(r))
served_leaks = sum(carried(r) for r in b_post if r["status"] == 200 and not compacting(r))
retried = [r for r in b_post if r["status"] == 400 and carried(r) and not compacting(r)]
leaked = sum(carried(r) for r in b_post)
print("compact-restart: first run answered '%s'; the backend answered before the restart: %s; compactions kept on disk: %d; "
      "relay restarted: %s" % (first, said(pre), kept, up))
print("compact-restart: codex answered '%s'; the backend answered after the restart: %s; relay attempts per turn: %s; "
      "turns with the compaction re-made: %s; A's sealed parts B received: %d (in the re-making: %d; in what B answered: %d; "
      "refused by B and retried without them: %d, trace sealedRetry: %s)" % (answer, said(post), kinds,
      " ".join(t.get("account") or "-" for t in remade) or "none", leaked, remake_leaks, served_leaks, len(retried),
      "yes" if any(t.get("sealedRetry") for t in turns) else "no"))
problems = []
if not any(r["account"] == "A" and r["answer"] == "compaction" for r in pre): problems.append("A never compacted before the restart")
if any(r["account"] != "A" for r in pre): problems.append("another account than A served before the restart")
if not kept: problems.append("no compaction kept on disk before the restart")
if up != "yes": problems.append("the relay was not restarted")
if "FACT-7Q2" not in answer: problems.append("Codex's answer after the restart forgot what the tool printed before the compaction")
if not any(r["account"] == "B" and r["answer"] == "compaction" for r in post): problems.append("B never re-made the compaction")
if remake_leaks: problems.append("B's re-making of the compaction carried A's sealed parts")
if served_leaks: problems.append("a request B answered carried A's sealed parts")
if retried or any(t.get("sealedRetry") for t in turns):
    problems.append("B was sent A's sealed parts and refused them (sealedRetry)")
refused = [r for r in post if r["status"] not in (200, 429) and r not in retried]
if refused: problems.append("upstream refusals: " + "; ".join("%s#%d %d %s" % (r["account"], r["seq"], r["status"], r["answer"]) for r in refused))
if not remade or remade[0].get("account") != "b": problems.append("no trace of the compaction re-made on b after the restart")
for p in problems: print("  FAIL: " + p)
sys.exit(1 if problems else 0)
PY
  then :; else
    fail=1
    echo "--- codex stderr (first)"; tail -n 10 "$w/first.err"; echo "--- codex stderr (resume)"; tail -n 20 "$w/codex.err"
    echo "--- relay log"; tail -n 30 "$w/relay.log"; echo "--- fake log"; tail -n 30 "$w/fake.log"
  fi
}
runs compact-restart && compact_restart_path

[ $fail = 0 ] && echo "codex-e2e: passed" || { echo "codex-e2e: FAILED"; exit 1; }
