# A hung 2-rank gloo job's real Flight Recorder dumps (rank 1 skipped one gather), read back.
# From the repository root: sh docs/examples/postmortem.sh DIR (any empty folder).
python -c "from tests.postmortem_shapes import make_dumps; make_dumps('skip_pair', '$1/dumps')"
trtsim analyze "$1/dumps" --replay "$1/replay.yaml"; echo "exit status $?"
trtsim run "$1/replay.yaml" > "$1/run.txt"; echo "exit status $?"; head -2 "$1/run.txt"
