#!/usr/bin/env bash
# End-to-end benchmark on the ranx setup: 1,000,000 queries × 100 results
# with 1-9 relevant documents graded 1-5, as TREC text (about 3.9 GB and
# 100 M run lines). Times `score` and `run` (embedded JetStream, one
# worker per CPU) alternately, ROUNDS times each, and prints every
# measurement and the medians: wall time, peak RSS, and the coordinator's
# ingest rate (MB of TREC text per second through parse, join and publish).
#
#   scripts/bench-e2e.sh                 # data in ./bench-data (generated once)
#   QUERIES=100000 scripts/bench-e2e.sh  # smaller
set -euo pipefail
cd "$(dirname "$0")/.."
queries=${QUERIES:-1000000}
rounds=${ROUNDS:-3}
data=${DATA:-bench-data/q$queries}
go build -trimpath -o bin/evalgate ./cmd/evalgate
if [ ! -f "$data/run.trec" ]; then
	bin/evalgate gen --queries "$queries" --depth 100 --seed 1 --out "$data"
fi
size=$(stat -c %s "$data/run.trec")
echo "cores: $(nproc); run file: $((size / 1000000)) MB"
timed() { # prints "seconds rss_kb", the command's stderr goes to $log
	/usr/bin/time -f "%e %M" -o "$tmp" "$@" >/dev/null 2>"$log"
	cat "$tmp"
}
tmp=$(mktemp); log=$(mktemp)
trap 'rm -f "$tmp" "$log"' EXIT
declare -a score_t run_t score_m run_m ingest
for i in $(seq "$rounds"); do
	read -r t m < <(timed bin/evalgate score --gold "$data/gold.qrels" --run "$data/run.trec")
	score_t+=("$t"); score_m+=("$m")
	echo "score  round $i: ${t}s, peak RSS $((m / 1024)) MB"
	read -r t m < <(timed bin/evalgate --log-level info --log-format json run --gold "$data/gold.qrels" --run "$data/run.trec" --progress off)
	run_t+=("$t"); run_m+=("$m")
	ms=$(grep '"inputs read and tasks published"' "$log" | sed 's/.*"took":\([0-9.]*\).*/\1/')
	ingest+=("$(awk -v b="$size" -v ms="$ms" 'BEGIN { printf "%.0f", b / 1e6 / (ms / 1000) }')")
	echo "run    round $i: ${t}s, peak RSS $((m / 1024)) MB, ingest ${ingest[-1]} MB/s"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
st=$(median "${score_t[@]}"); rt=$(median "${run_t[@]}")
echo "median: score ${st}s (RSS $(( $(median "${score_m[@]}") / 1024 )) MB), run ${rt}s (RSS $(( $(median "${run_m[@]}") / 1024 )) MB), run/score $(awk -v a="$rt" -v b="$st" 'BEGIN { printf "%.2f", a / b }'), ingest $(median "${ingest[@]}") MB/s"
