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
# and prints every measurement (wall time and CPU time, user + sys), the
# medians and the ratios to alone: of the medians and, in brackets, the
# median of the rounds' own ratios (a VM that drifts in speed over the
# minutes of the benchmark shifts a round's measurements alike). Each
# measurement reads its inputs first, untimed, so that it reads them from
# the page cache (the two 3.9 GB runs need not stay cached beside other
# benchmark data). On a shared machine the CPU times are the steadier
# figure.
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
declare -A wall cpu
names=(alone paired)
if [ "$simd" = 1 ]; then names+=(simd); fi
if [ -n "$other" ]; then names+=(other); fi
measure() { # name command...: runs it, records and prints wall and CPU seconds
	local name=$1
	shift
	cat "$data/gold.qrels" "$data/run.trec" "$base/run.trec" >/dev/null # into the page cache
	/usr/bin/time -f "%e %U %S" -o "$tmp" "$@" >/dev/null
	read -r w u s <"$tmp"
	wall[$name]+=" $w"
	cpu[$name]+=" $(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')"
	printf '%-7s round %d: %6ss wall, %6ss CPU\n' "$name" "$i" "$w" "${cpu[$name]##* }"
}
paired_args=(score --gold "$data/gold.qrels" --run "$data/run.trec" --baseline-run "$base/run.trec")
for i in $(seq "$rounds"); do
	measure alone bin/evalgate score --gold "$data/gold.qrels" --run "$data/run.trec"
	measure paired bin/evalgate "${paired_args[@]}"
	if [ "$simd" = 1 ]; then measure simd bin/evalgate-simd "${paired_args[@]}"; fi
	if [ -n "$other" ]; then measure other "$other" "${paired_args[@]}"; fi
done
median() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# rounds: the median over rounds of round i's a / round i's b
rounds() { median "$(paste -d' ' <(printf '%s\n' $1) <(printf '%s\n' $2) | awk '{ printf "%.3f\n", $1 / $2 }')"; }
echo "alone: score; paired: score --baseline-run; simd: the same, GOEXPERIMENT=simd build; other: the same, ${other:-(none)}"
for kind in wall cpu; do
	declare -n m=$kind
	a=$(median "${m[alone]}")
	line="median $kind: alone ${a}s"
	for n in "${names[@]:1}"; do
		v=$(median "${m[$n]}")
		line+=", $n ${v}s (×$(ratio "$v" "$a"); rounds ×$(rounds "${m[$n]}" "${m[alone]}"))"
	done
	echo "$line"
done
