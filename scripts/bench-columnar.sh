#!/usr/bin/env bash
# Columnar input benchmark: converts a TREC run to an Arrow IPC file once
# with `evalgate convert`, then, ROUNDS times, converts it to Parquet and
# times `score` on the TREC text, the Parquet file and the Arrow file, in
# turn, and prints every measurement, the medians (wall time, CPU time,
# peak RSS) and the ratios to text scoring. Issue 9 asks for Parquet <=
# 0.5x and Arrow <= 0.4x the wall time of text, with peak RSS no higher,
# and for convert to Parquet to take no longer than scoring the text.
#
#   scripts/bench-columnar.sh                       # 200,000 queries x 100
#   QUERIES=1000000 scripts/bench-columnar.sh       # 1M x 100
#   DATA=/path/with/gold.qrels+run.trec OUT=/tmp/c scripts/bench-columnar.sh
#   COMPRESSION=snappy scripts/bench-columnar.sh    # Parquet codec for convert (default none)
set -euo pipefail
cd "$(dirname "$0")/.."
queries=${QUERIES:-200000}
rounds=${ROUNDS:-5}
data=${DATA:-bench-data/q$queries}
out=${OUT:-bench-data/columnar-q$queries}
compression=${COMPRESSION:-none}
bin=${BIN:-bin/evalgate}
if [ -z "${BIN:-}" ]; then
	go build -trimpath -o "$bin" ./cmd/evalgate
fi
if [ ! -f "$data/run.trec" ]; then
	"$bin" gen --queries "$queries" --depth 100 --seed 1 --out "$data"
fi
mkdir -p "$out"
tmp=$(mktemp); log=$(mktemp)
trap 'rm -f "$tmp" "$log"' EXIT
timed() { # prints "wall_s rss_kb cpu_s"; the command's stderr goes to $log
	/usr/bin/time -f "%e %M %U %S" -o "$tmp" "$@" >/dev/null 2>"$log"
	awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }' "$tmp"
}
pq="$out/run.$compression.parquet"; ar="$out/run.arrow"
read -r t m c < <(timed "$bin" convert "$data/run.trec" "$ar")
echo "convert arrow: ${t}s (cpu ${c}s), peak RSS $((m / 1024)) MB, $(($(stat -c %s "$ar") / 1000000)) MB"
echo "cores: $(nproc); text run: $(($(stat -c %s "$data/run.trec") / 1000000)) MB; load: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A wall rss cpu
for i in $(seq "$rounds"); do
	read -r t m c < <(timed "$bin" convert --compression "$compression" "$data/run.trec" "$pq")
	wall[convert]+="$t "; rss[convert]+="$m "; cpu[convert]+="$c "
	printf '%-8s round %d: %5ss wall, %5ss cpu, peak RSS %d MB, %d MB written\n' convert "$i" "$t" "$c" $((m / 1024)) $(($(stat -c %s "$pq") / 1000000))
	for v in text parquet arrow; do
		case $v in text) f="$data/run.trec" ;; parquet) f=$pq ;; arrow) f=$ar ;; esac
		read -r t m c < <(timed "$bin" score --gold "$data/gold.qrels" --run "$f")
		wall[$v]+="$t "; rss[$v]+="$m "; cpu[$v]+="$c "
		printf '%-8s round %d: %5ss wall, %5ss cpu, peak RSS %d MB\n' "$v" "$i" "$t" "$c" $((m / 1024))
	done
done
median() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for v in convert text parquet arrow; do
	printf 'median %-8s %5ss wall, %5ss cpu, peak RSS %d MB\n' "$v" "$(median "${wall[$v]}")" "$(median "${cpu[$v]}")" $(($(median "${rss[$v]}") / 1024))
done
ratio() { awk -v a="$(median "$1")" -v b="$(median "$2")" 'BEGIN { printf "%.2f", a / b }'; }
echo "ratio parquet/text: wall $(ratio "${wall[parquet]}" "${wall[text]}"), cpu $(ratio "${cpu[parquet]}" "${cpu[text]}"), rss $(ratio "${rss[parquet]}" "${rss[text]}")"
echo "ratio arrow/text:   wall $(ratio "${wall[arrow]}" "${wall[text]}"), cpu $(ratio "${cpu[arrow]}" "${cpu[text]}"), rss $(ratio "${rss[arrow]}" "${rss[text]}")"
echo "ratio convert/text: wall $(ratio "${wall[convert]}" "${wall[text]}"), cpu $(ratio "${cpu[convert]}" "${cpu[text]}"), rss $(ratio "${rss[convert]}" "${rss[text]}")"
