#!/usr/bin/env bash
# make demo-live: a live retrieval gate, end to end on this machine.
#
# The example retriever (examples/retriever: BM25 with bleve) serves a
# synthetic corpus from `evalgate gen --corpus`. evalgate asks it for every
# gold query through the queue (an embedded JetStream server and a worker
# per CPU): first with the baseline strategy, saving what it retrieved as
# the baseline run, then with the candidate strategy, gated against that
# baseline query by query. The service is stopped at the end, also when a
# step fails.
#
#   scripts/demo-live.sh              # 2000 queries, port 18080
#   QUERIES=500 PORT=18123 scripts/demo-live.sh
set -euo pipefail
cd "$(dirname "$0")/.."
queries=${QUERIES:-2000}
port=${PORT:-18080}
out=demo/live
mkdir -p "$out"

bin/evalgate gen --corpus --queries "$queries" --tags --seed 7 --out "$out"
if curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
	echo "port $port is taken: PORT=<another> make demo-live" >&2
	exit 1
fi
bin/retriever --corpus "$out/corpus.jsonl" --listen "127.0.0.1:$port" >"$out/retriever.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
echo "indexing the corpus (the retriever's log: $out/retriever.log)"
until curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; do
	if ! kill -0 "$pid" 2>/dev/null; then
		cat "$out/retriever.log" >&2
		exit 1
	fi
	sleep 0.2
done
export RETRIEVER_URL="http://127.0.0.1:$port"

echo
echo "== baseline strategy: every gold query through the queue, saved as the baseline run"
bin/evalgate run --gold "$out/gold.jsonl" --retriever examples/retriever/baseline.yaml \
	--save-run "$out/baseline.jsonl" --summary-out "$out/baseline-summary.json" -m R@10,nDCG@10,RR
echo
echo "== candidate strategy, gated against the baseline run"
bin/evalgate run --gold "$out/gold.jsonl" --retriever examples/retriever/candidate.yaml \
	--baseline-run "$out/baseline.jsonl" --rank-by rank \
	--criteria examples/retriever/ship-criteria.yaml --report "$out/report"
echo
echo "reports: $out/report/ (comment.md, report.html, junit.xml, summary.json)"
