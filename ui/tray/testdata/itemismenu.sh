#!/bin/sh
# The tray item's ItemIsMenu over many starts, under load (issue 46: 1 start in 23 registered
# ItemIsMenu true, and the host then ignored left clicks). Each start is a process that starts the
# tray as RunTray does (TestSNIHarness), on the session bus this runs in; the test reads
# ItemIsMenu and Title from the bus. With ORDER=late the harness sets the title and the click
# handler in onReady, as the tray did before the fix, for comparison.
#   .ci/with-keyring sh ui/tray/testdata/itemismenu.sh [STARTS=50] [HOGS=4] [ORDER=]
# HOGS busy loops load the CPUs meanwhile (the race needs a late goroutine). `make itemismenu`.
set -eu
starts=${1:-50}; hogs=${2:-4}; order=${3:-}
bin=$(mktemp)
trap 'rm -f "$bin"; for p in $pids; do kill "$p" 2>/dev/null || true; done' EXIT
pids=
go test -c -o "$bin" ./ui/tray/
for _ in $(seq "$hogs"); do ( while :; do :; done ) & pids="$pids $!"; done
SNI_ORDER=$order SNI_STARTS=$starts "$bin" -test.run '^TestTheTrayItemTakesLeftClicks$' -test.v 2>&1 |
  grep -E 'starts|start [0-9]+:' || true
