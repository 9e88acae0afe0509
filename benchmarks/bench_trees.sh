#!/bin/sh
# Two trees, one machine, one call: each benchmark script run from the old tree and from the new
# one in turn, so drift hits both alike; compare each figure against the other tree's min-max.
#   sh benchmarks/bench_trees.sh OLD_TREE NEW_TREE ROUNDS OUT_DIR
# OLD_TREE and NEW_TREE each hold trtsim/ and benchmarks/ (git archive REV trtsim benchmarks).
# Writes OUT_DIR/{inproc,process}-{old,new}-N.txt and OUT_DIR/intercept-{old,new}.json.
set -e
old=$1 new=$2 rounds=$3 out=$4
mkdir -p "$out"
i=1
while [ "$i" -le "$rounds" ]; do
    for t in old new; do
        [ "$t" = old ] && tree=$old || tree=$new
        PYTHONPATH="$tree:$PYTHONPATH" python3 "$tree/benchmarks/bench_inproc.py" --repeat 3 \
            > "$out/inproc-$t-$i.txt"
        PYTHONPATH="$tree:$PYTHONPATH" python3 "$tree/benchmarks/bench_process.py" --repeat 3 \
            --json "$out/process-$t-$i.json" > "$out/process-$t-$i.txt"
    done
    i=$((i + 1))
done
for t in old new; do
    [ "$t" = old ] && tree=$old || tree=$new
    PYTHONPATH="$tree:$PYTHONPATH" python3 "$tree/benchmarks/bench_intercept.py" \
        --iterations 300 --repeat 11 --json "$out/intercept-$t.json" > "$out/intercept-$t.txt"
done
