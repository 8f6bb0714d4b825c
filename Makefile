# conductor-shadow — the two commands of the README are `make run` and `make test`.
SHELL := /usr/bin/env bash
CHDB_VERSION ?= 26.7.3-stable.1
LIBCHDB ?= /usr/local/lib/libchdb.so
export CHDB_LIB_PATH ?= $(LIBCHDB)
GO ?= go

.PHONY: all build run test libchdb chromium bubblewrap generate bench bench-go vet clean

all: build

build:
	$(GO) build -o bin/conductor-shadow ./cmd/conductor-shadow
	$(GO) build -o bin/loadtest ./cmd/loadtest
	$(GO) build -o bin/simllm ./cmd/simllm
	$(GO) build -o bin/devkafka ./cmd/devkafka

## libchdb: install the embedded ClickHouse engine once (npm package @chdb/lib-linux-x64-gnu).
libchdb:
	@scripts/install-libchdb.sh $(CHDB_VERSION) $(CHDB_LIB_PATH)

## run: simulated pool + server, replay 350 real prompts, one GSM8K suite, keep serving.
run: libchdb build
	@scripts/run.sh

## chromium: install Debian's chromium for the browser test when missing (as .ci/run does);
## without root or apt-get it says the browser test will be skipped.
chromium:
	@scripts/install-chromium.sh

## bubblewrap: install Debian's bubblewrap, the code grader's OS sandbox, when missing
## (as .ci/run does) and check it can make namespaces; without it code graders are refused.
bubblewrap:
	@scripts/install-bubblewrap.sh

## test: every test, with the real embedded engine, chromium and bubblewrap. Tests that need the
## source datasets in ../shared/datasets (CONDUCTOR_SHADOW_DATASETS) skip without them.
## Their temporary folders (TMPDIR: engine data folders, processes' folders, the go tool's
## work folder) are made under TEST_TMPDIR, /dev/shm when it is writable: the engine creates
## and removes part files all the time, and on ext4 each new inode is found by scanning past
## the recently deleted ones (on the 2-core test machine: 211 of the suite's 558 CPU s were
## system time on ext4, 100 on tmpfs). The folder's name is short: a test binds a Unix
## socket in its own temporary folder, and a socket's path must fit in 108 bytes.
##
## The packages that wait most (processes, sockets, a browser, sandboxes) are named first
## (TEST_FIRST), so that they start first and the CPU-bound simulations fill the cores
## while they wait; the run does not end with one of them alone. Four test binaries run at
## a time (TEST_PARALLEL): at two, both often waited and a core stood idle (on the 2-core
## machine, warm, the same tests: 210 s at -p 2, 190–195 s at -p 4). Every statement that
## must answer within a console time limit has one a busy machine reaches (the console
## worker runs at the lowest CPU priority). GOGC=400 (TEST_GOGC) lets a test process's heap
## grow to five times its live data before a collection: the simulations allocate per
## simulated suite, and at the default 100 a quarter of eval/validity's CPU went to the
## collector (46.7 → 35.6 CPU s).
TEST_TMPDIR ?= $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo $${TMPDIR:-/tmp})
TEST_FIRST := ./store ./cmd/conductor-shadow ./ingest ./cmd/loadtest ./eval ./web ./eval/livejudge ./eval/validity ./eval/judge
TEST_PARALLEL ?= 4
TEST_GOGC ?= 400
test: libchdb chromium bubblewrap
	@tmp=$$(mktemp -d "$(TEST_TMPDIR)/cs.XXXXXX") && trap 'rm -rf "$$tmp"' EXIT && \
		echo "TMPDIR=$$tmp GOGC=$(TEST_GOGC) $(GO) test -p $(TEST_PARALLEL) -count=1 -timeout 20m $(TEST_FIRST) ./..." && \
		TMPDIR="$$tmp" GOGC=$(TEST_GOGC) $(GO) test -p $(TEST_PARALLEL) -count=1 -timeout 20m $(TEST_FIRST) ./...

## generate: templ components and the shipped regression sets / replay file.
generate:
	$(GO) run github.com/a-h/templ/cmd/templ@v0.3.1118 generate -path web
	$(GO) run ./regression-sets/gen

## bench: every load figure side by side, as ratios (`loadtest bench`): the proxy against
## a bare reverse proxy by role and rate (added p95/p99 and process CPU s per 1,000
## forwarded exchanges), durable intake per path (store-first queue, POST /v1/tap/batch,
## POST /v1/tap) and the pages at 1M runs. Figures only; not part of `make test`.
## BENCH_FLAGS passes flags, e.g. BENCH_FLAGS='--rates 1000 --repeat 1'.
bench: libchdb build
	bin/loadtest bench $(BENCH_FLAGS)

## bench-go: the Go benchmarks (go test -bench), not part of `make test` either.
bench-go: libchdb
	$(GO) test -run '^$$' -bench . -benchmem ./...

vet:
	$(GO) vet ./...

clean:
	rm -rf bin
