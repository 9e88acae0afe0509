#!/bin/sh
# The figures docs/BENCHMARKS.md takes from the GPU host, in one call, into $OUT (default .):
# interception cost (8 gloo ranks), the process backend's guard overhead with and without
# call logs, the real-framework tests' time to each report, and the GPU-marked tests.
#
#   sh benchmarks/gpu_host.sh [WHEELS_DIR] [REALCODE_CACHE]
#
# WHEELS_DIR: wheels the host lacks (greenlet); REALCODE_CACHE: an XDG cache holding
# trtsim/realcode (the hosts reach no registry). trtsim runs from the checkout (PYTHONPATH).
set -e
OUT=${OUT:-.}
SITE=""
if [ -n "$1" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/trtsim-site "$1"/*.whl
    SITE=/tmp/trtsim-site
fi
if [ -n "$2" ]; then export XDG_CACHE_HOME="$2"; fi
export PYTHONPATH="$PWD${SITE:+:$SITE}${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; python3 -c "import torch; print(torch.__version__)"; } > "$OUT/machine.txt"
python3 benchmarks/bench_intercept.py --iterations 300 --repeat 7 --json "$OUT/intercept.json" \
    > "$OUT/intercept.txt" 2>&1
python3 benchmarks/bench_process.py --iterations 300 --repeat 5 --json "$OUT/process.json" \
    > "$OUT/process.txt" 2>&1
PYTEST="python3 -m pytest -q -p no:cacheprovider -p trtsim.app.pytest_plugin"
$PYTEST tests/realcode --durations=0 > "$OUT/realcode.txt" 2>&1 || true
# every module is collected for the marker: those needing what the host lacks are left out
$PYTEST -m gpu --continue-on-collection-errors tests > "$OUT/gpu_tests.txt" 2>&1 || true
tail -n 12 "$OUT/intercept.txt" "$OUT/process.txt"; tail -n 2 "$OUT/realcode.txt" "$OUT/gpu_tests.txt"
