# evalgate — build, test, benchmark.
#
#   make demo        build, generate sample data, score and gate it through the queue
#   make demo-live   the same against a live retriever: the example BM25 service, two strategies
#   make retriever   build the example search service (examples/retriever) into bin/
#   make test        vet + all tests (race detector) + short fuzz runs, both modules,
#                    and metric's tests in the GOEXPERIMENT=simd build
#   make bench       benchmarks (kernel, ingest, distributed, worker scaling)
#   make lint        gofmt, go vet, staticcheck (and the GOEXPERIMENT=simd build of metric)
#   make docker-test the docker-compose cluster test (needs Docker)

GO          ?= go
BIN         := bin/evalgate
RETRIEVER   := bin/retriever
# The example retriever is a module of its own (it links bleve; evalgate
# does not): each target that covers it runs in its directory.
EXAMPLE     := examples/retriever
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck
FUZZTIME    ?= 20000x
DEMO_QUERIES ?= 20000

.PHONY: build retriever demo demo-live test unit fuzz bench lint docker-test docker-image tools clean

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/evalgate

retriever:
	cd $(EXAMPLE) && $(GO) build -trimpath -o $(CURDIR)/$(RETRIEVER) .

# A production retriever (the baseline) and a candidate, on one synthetic
# gold set; the candidate is scored through the queue and gated.
demo: build
	$(BIN) gen --queries $(DEMO_QUERIES) --depth 100 --format jsonl --tags --seed 7 \
		--recall 0.95 --rank-decay 0.45 --out demo/production
	$(BIN) gen --queries $(DEMO_QUERIES) --depth 100 --format jsonl --tags --seed 7 \
		--recall 0.97 --rank-decay 0.35 --out demo
	$(BIN) run --gold demo/gold.jsonl --run demo/run.jsonl --baseline-run demo/production/run.jsonl \
		--criteria examples/ship-criteria.yaml --report demo/report

# A live retrieval gate: the example retriever serves a synthetic corpus;
# the candidate strategy is asked through the queue and gated against the
# baseline strategy's answers (scripts/demo-live.sh).
demo-live: build retriever
	./scripts/demo-live.sh

test: unit fuzz

unit:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...
	GOEXPERIMENT=simd $(GO) test -count=1 ./metric/
	cd $(EXAMPLE) && $(GO) vet ./... && $(GO) test -race -count=1 -timeout 10m ./...

# Every fuzz target of both modules, briefly (FUZZTIME executions each).
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) ./scripts/fuzz.sh
	cd $(EXAMPLE) && FUZZTIME=$(FUZZTIME) GO=$(GO) $(CURDIR)/scripts/fuzz.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./...

lint: tools
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(STATICCHECK) ./...
	GOEXPERIMENT=simd $(GO) vet ./metric/ && GOEXPERIMENT=simd $(STATICCHECK) ./metric/
	cd $(EXAMPLE) && $(GO) vet ./... && $(STATICCHECK) ./...

tools:
	@test -x $(STATICCHECK) || $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2

docker-test:
	$(GO) test -tags docker -count=1 -v -timeout 15m ./internal/dockertest/

clean:
	rm -rf bin demo

docker-image:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/evalgate-linux ./cmd/evalgate
	docker build -t evalgate:local .
