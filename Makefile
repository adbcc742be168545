# evalgate — build, test, benchmark.
#
#   make demo        build, generate sample data, score and gate it through the queue
#   make test        vet + all tests (race detector) + short fuzz runs
#   make bench       benchmarks (kernel, ingest, distributed, worker scaling)
#   make lint        gofmt, go vet, staticcheck
#   make docker-test the docker-compose cluster test (needs Docker)

GO          ?= go
BIN         := bin/evalgate
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck
FUZZTIME    ?= 20000x
DEMO_QUERIES ?= 20000

.PHONY: build demo test unit fuzz bench lint docker-test docker-image tools clean

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/evalgate

# A production retriever (the baseline) and a candidate, on one synthetic
# gold set; the candidate is scored through the queue and gated.
demo: build
	$(BIN) gen --queries $(DEMO_QUERIES) --depth 100 --format jsonl --tags --seed 7 \
		--recall 0.95 --rank-decay 0.45 --out demo/production
	$(BIN) gen --queries $(DEMO_QUERIES) --depth 100 --format jsonl --tags --seed 7 \
		--recall 0.97 --rank-decay 0.35 --out demo
	$(BIN) run --gold demo/gold.jsonl --run demo/run.jsonl --baseline-run demo/production/run.jsonl \
		--criteria examples/ship-criteria.yaml --report demo/report

test: unit fuzz

unit:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...

# Every fuzz target of the module, briefly (FUZZTIME executions each).
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) ./scripts/fuzz.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./...

lint: tools
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(STATICCHECK) ./...

tools:
	@test -x $(STATICCHECK) || $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2

docker-test:
	$(GO) test -tags docker -count=1 -timeout 15m ./internal/dockertest/

clean:
	rm -rf bin demo

docker-image:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/evalgate-linux ./cmd/evalgate
	docker build -t evalgate:local .
