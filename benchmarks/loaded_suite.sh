#!/bin/sh
# The suite on a busy machine: a clean clone of this checkout, every core kept busy by a
# spinning process, then the second Quick start command (install included) once and the suite
# alone RUNS-1 more times. Prints one line per run (status, seconds, pytest's summary); any
# non-zero status is a failure of the product. Usage: sh benchmarks/loaded_suite.sh [RUNS]
# (default 5). Logs go to $TMPDIR/trtsim-loaded/runN.log.
set -u
runs=${1:-5}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${TMPDIR:-/tmp}/trtsim-loaded
rm -rf "$work" && mkdir -p "$work" && git clone -q "$repo" "$work/clone" || exit 2
cd "$work/clone" || exit 2
hogs=""
for _ in $(seq "$(nproc)"); do python3 -c "while True: pass" & hogs="$hogs $!"; done
trap 'kill $hogs 2>/dev/null' EXIT INT TERM
status=0
for i in $(seq "$runs"); do
  start=$(date +%s)
  cmd=".venv/bin/pytest -q -n auto"
  [ "$i" = 1 ] && cmd="sh .ci/run"
  timeout 1500 $cmd > "$work/run$i.log" 2>&1; rc=$?
  [ "$rc" = 0 ] || status=1
  echo "run $i: status $rc, $(( $(date +%s) - start )) s, $(grep -E 'passed|failed' "$work/run$i.log" | tail -1)"
done
exit $status
