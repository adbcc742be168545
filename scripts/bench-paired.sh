#!/usr/bin/env bash
# Paired statistics against plain scoring on the ranx setup: 1,000,000
# queries × 100 results. Times, alternately and ROUNDS times each,
#   score                   the run alone
#   score --baseline-run    the run against a baseline run of the same gold
#                           set (1000 bootstrap replicates, 1000 permutations,
#                           the 14 default measures)
#   the same, SIMD build    evalgate built with GOEXPERIMENT=simd (the AVX2
#                           replicate loop), unless SIMD=0
#   the same, OTHER binary  with OTHER=path/to/evalgate (another version, to
#                           compare with)
# and prints every measurement, the medians and the ratios paired/alone.
#
#   scripts/bench-paired.sh                          # data in ./bench-data (generated once)
#   DATA=/data/q1000000 BASE=/data/paired scripts/bench-paired.sh
#   QUERIES=200000 ROUNDS=5 scripts/bench-paired.sh  # smaller
set -euo pipefail
cd "$(dirname "$0")/.."
queries=${QUERIES:-1000000}
rounds=${ROUNDS:-3}
simd=${SIMD:-1}
other=${OTHER:-}
data=${DATA:-bench-data/q$queries}
base=${BASE:-$data-base} # a directory: the baseline run is $base/run.trec
go build -trimpath -o bin/evalgate ./cmd/evalgate
if [ "$simd" = 1 ]; then
	GOEXPERIMENT=simd go build -trimpath -o bin/evalgate-simd ./cmd/evalgate
fi
if [ ! -f "$data/run.trec" ]; then
	bin/evalgate gen --queries "$queries" --depth 100 --seed 1 --out "$data"
fi
if [ ! -f "$base/run.trec" ]; then # the same gold set (it depends only on --queries and --seed), a weaker run
	bin/evalgate gen --queries "$queries" --depth 100 --seed 1 --recall 0.65 --out "$base"
fi
cmp -s "$data/gold.qrels" "$base/gold.qrels" || { echo "$base/gold.qrels differs from $data/gold.qrels" >&2; exit 1; }
echo "cores: $(nproc); run files: $(($(stat -c %s "$data/run.trec") / 1000000)) MB and $(($(stat -c %s "$base/run.trec") / 1000000)) MB"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
timed() { # prints the wall time in seconds
	/usr/bin/time -f "%e" -o "$tmp" "$@" >/dev/null
	cat "$tmp"
}
declare -a alone paired paired_simd paired_other
for i in $(seq "$rounds"); do
	alone+=("$(timed bin/evalgate score --gold "$data/gold.qrels" --run "$data/run.trec")")
	echo "score                 round $i: ${alone[-1]}s"
	paired+=("$(timed bin/evalgate score --gold "$data/gold.qrels" --run "$data/run.trec" --baseline-run "$base/run.trec")")
	echo "score --baseline-run  round $i: ${paired[-1]}s"
	if [ "$simd" = 1 ]; then
		paired_simd+=("$(timed bin/evalgate-simd score --gold "$data/gold.qrels" --run "$data/run.trec" --baseline-run "$base/run.trec")")
		echo "  the same, SIMD      round $i: ${paired_simd[-1]}s"
	fi
	if [ -n "$other" ]; then
		paired_other+=("$(timed "$other" score --gold "$data/gold.qrels" --run "$data/run.trec" --baseline-run "$base/run.trec")")
		echo "  the same, $other round $i: ${paired_other[-1]}s"
	fi
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
a=$(median "${alone[@]}"); p=$(median "${paired[@]}")
line="median: score ${a}s, score --baseline-run ${p}s (×$(ratio "$p" "$a"))"
if [ "$simd" = 1 ]; then
	s=$(median "${paired_simd[@]}")
	line+=", SIMD build ${s}s (×$(ratio "$s" "$a"))"
fi
if [ -n "$other" ]; then
	o=$(median "${paired_other[@]}")
	line+=", $other ${o}s (×$(ratio "$o" "$a"))"
fi
echo "$line"
