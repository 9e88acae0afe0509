#!/bin/sh
# Two trees, one machine, one call: each benchmark script run from the old tree and from the new
# one in turn, so drift hits both alike; compare each figure against the other tree's min-max.
#   sh benchmarks/bench_trees.sh OLD_TREE NEW_TREE ROUNDS OUT_DIR [BENCH...]
# OLD_TREE and NEW_TREE (absolute paths) each hold trtsim/ and benchmarks/ (git archive REV
# trtsim benchmarks); OUT_DIR is absolute too.
# BENCH: inproc, process (each ROUNDS times, interleaved) and intercept (once a tree, its own
# median of 11); default: inproc process. Writes OUT_DIR/BENCH-{old,new}-N.{txt,json}.
set -e
old=$1 new=$2 rounds=$3 out=$4
shift 4
benches=${*:-inproc process}
mkdir -p "$out"
run() {   # run BENCH TREE_NAME ROUND
    [ "$2" = old ] && tree=$old || tree=$new
    case $1 in
        inproc) set -- "$1" "$2" "$3" --repeat 3 ;;
        process) set -- "$1" "$2" "$3" --repeat 3 --json "$out/$1-$2-$3.json" ;;
        intercept) set -- "$1" "$2" "$3" --iterations 300 --repeat 11 --json "$out/$1-$2-$3.json" ;;
    esac
    bench=$1 name=$2 round=$3
    shift 3
    # from the tree's own folder: a spawned rank's interpreter puts its working directory
    # first on sys.path, so the repository around would otherwise shadow the old tree
    (cd "$tree" && PYTHONPATH="$tree:$PYTHONPATH" python3 "benchmarks/bench_$bench.py" "$@" \
        > "$out/$bench-$name-$round.txt")
}
for bench in $benches; do
    n=$rounds
    [ "$bench" = intercept ] && n=1
    i=1
    while [ "$i" -le "$n" ]; do
        run "$bench" old "$i"
        run "$bench" new "$i"
        i=$((i + 1))
    done
done
