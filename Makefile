# agentwire: every target works on a fresh machine with only Go installed;
# modules come from the Go module proxy at the versions pinned in go.mod.
GO ?= go
SHELL := bash
export PATH := $(PATH):/usr/local/go/bin

# Directories the generator writes into (only files with its header are its
# own); the list lives in gen.OutputDirs.
GENERATED = $(shell $(GO) run ./cmd/agentwire-gen generate --dirs)

.PHONY: all generate verify-generate test test-console test-short vet check check-runtime-contract bench bench-smoke fuzz demo diagrams diagrams-browser-check model-check model-check-long

all: generate test

## build: the agentwire binary at bin/agentwire (go install ./cmd/agentwire puts it in $(go env GOPATH)/bin)
.PHONY: build
build:
	$(GO) build -o bin/agentwire ./cmd/agentwire

## generate: validate spec/*.yaml and rewrite the generated files (agentwire-gen generate --dirs lists where)
generate:
	$(GO) run ./cmd/agentwire-gen generate

## verify-generate: regenerate and fail if the result differs from what is committed
## (it also fails when a generated file is on disk but not committed to git)
verify-generate:
	$(GO) run ./cmd/agentwire-gen generate --verify
	@untracked="$$(git ls-files --others --exclude-standard -- $(GENERATED) 2>/dev/null)"; \
	if [ -n "$$untracked" ]; then echo "verify-generate: generated files not committed:" >&2; echo "$$untracked" >&2; exit 1; fi

## vet: go vet, and gofmt over every Go file outside testdata
vet:
	$(GO) vet ./...
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' | grep -v /testdata/) 2>/dev/null)"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:" >&2; echo "$$unformatted" >&2; exit 1; fi

## test: vet, then every test with the race detector
test: vet
	$(GO) test -race -count=1 ./...
	@$(GO) run ./cmd/agentwire-harnesses status

## test-console: the web console in real headless Chromium against a real Core and real
## Runtimes, axe-core on every page, screenshots under $AGENTWIRE_ARTIFACTS/console
## (internal/core/console/browsertest/run.sh; needs Chromium and npm; budget 8 minutes,
## about 10 s once built). `make test` skips it and names this target.
test-console:
	bash internal/core/console/browsertest/run.sh

test-short: vet
	$(GO) test -race -short ./...

## test-postgres: the PostgreSQL store's tests (core/store/postgres: the store conformance suites,
## raced writes included, and replicas racing claims and lease reaping on two stores of one
## database) against a real PostgreSQL: internal/pgtest/start.sh starts a throwaway
## server on 127.0.0.1 under a temporary directory (as an unprivileged user when run as root),
## the tests run with its DSN and AGENTWIRE_REQUIRE_POSTGRES=1 (no skipping), and the server is
## stopped and its directory removed however the tests end. Needs PostgreSQL's binaries (initdb,
## pg_ctl) on PATH or under /usr/lib/postgresql/*/bin; make test skips these tests without a server.
.PHONY: test-postgres
test-postgres:
	@dir="$$(mktemp -d)"; trap 'internal/pgtest/stop.sh "$$dir"' EXIT; \
	dsn="$$(internal/pgtest/start.sh "$$dir")" || exit 1; \
	echo "test-postgres: PostgreSQL at $$dsn"; \
	AGENTWIRE_TEST_POSTGRES="$$dsn" AGENTWIRE_REQUIRE_POSTGRES=1 $(GO) test -race -count=1 ./core/store/postgres/...

## test-replicas: the replica fault test (internal/chaos/replicas_test.go, docs/deployment.md): a
## throwaway PostgreSQL (internal/pgtest), three `agentwire core serve` replicas on it behind a
## loopback balancer, two Runtimes, 90 Turns with active input and permission answers sent through
## the replicas that do not hold the devices, the replica that holds them SIGKILLed mid-load and
## not restarted; then the chaos checker. About 30 s once built; make test skips it.
.PHONY: test-replicas
test-replicas:
	$(GO) build -o bin/agentwire ./cmd/agentwire
	$(GO) build -o bin/echo-agent ./examples/echo-agent
	@dir="$$(mktemp -d)"; trap 'internal/pgtest/stop.sh "$$dir"' EXIT; \
	dsn="$$(internal/pgtest/start.sh "$$dir")" || exit 1; \
	echo "test-replicas: PostgreSQL at $$dsn"; \
	AGENTWIRE_TEST_POSTGRES="$$dsn" AGENTWIRE_REQUIRE_POSTGRES=1 AGENTWIRE_REPLICA_BINS="$$PWD/bin" \
		$(GO) test -count=1 -run '^TestReplicaFault$$' -v -timeout 8m ./internal/chaos/

## bench-replicas: Turns/s through real Cores on SQLite (one Core) and on PostgreSQL (one and three
## replicas), same run (internal/core/server/replicas_bench_test.go, BENCHMARKS.md); PostgreSQL is a
## throwaway server with its durable defaults (fsync on), as SQLite's store is synchronous.
.PHONY: bench-replicas
bench-replicas:
	@dir="$$(mktemp -d)"; trap 'internal/pgtest/stop.sh "$$dir"' EXIT; \
	dsn="$$(PGTEST_DURABLE=1 internal/pgtest/start.sh "$$dir")" || exit 1; \
	AGENTWIRE_TEST_POSTGRES="$$dsn" $(GO) test -run '^$$' -bench '^BenchmarkTurnsAcrossReplicas$$' -benchtime 2s -count 3 ./internal/core/server/

## check-runtime-contract: the protocol contract checks (daemon-protocol.txt:193): the shared wire
## validators (./wire/...), the spec tables, generated machines and generator, the transport and
## driver (./internal/peer/...), Core's gateway, the Runtime's dispatcher (internal/runtime/execution) with a
## controlled adapter, the Harness declaration tests and the conformance kit against the shipped
## adapters, every Runtime scenario in spec/scenarios/runtime/ run by the real daemon against a
## scripted Core, every Core scenario in spec/scenarios/core/ run by the real Core against a
## scripted Runtime, and every shared scenario in spec/scenarios/wire/ run by both sides (listed once
## with both results), over a real WebSocket. No model credentials, no network beyond loopback.
check-runtime-contract:
	$(GO) test -race -count=1 ./wire/... ./spec/... ./fsm/... ./internal/gen/... ./internal/peer/... ./internal/core/gateway/ ./internal/runtime/execution/ \
		./runtime/harness/ ./runtime/harnesstest/ ./internal/runtime/adapters/script/ ./runtime/adapters/exec/
	$(GO) test -race -count=1 -run 'TestRuntimeScenarios' -v ./runtime/daemon/ | grep -E '^\s*(--- (PASS|FAIL)|ok|FAIL|PASS)' ; test $${PIPESTATUS[0]} -eq 0
	$(GO) test -race -count=1 -run 'TestCoreScenarios' -v ./internal/core/server/ | grep -E '^\s*(--- (PASS|FAIL)|ok|FAIL|PASS)' ; test $${PIPESTATUS[0]} -eq 0
	$(GO) test -race -count=1 -json -run 'TestWireScenarios' ./internal/core/server/ ./runtime/daemon/ | $(GO) run ./internal/contractreport

## check: the Go checks (vet, gofmt, generated code in step with the spec) and the contract checks
check: vet verify-generate check-runtime-contract

## model-check: the model checker at the CI bound (docs/model-check.md): Core and the Runtime's
## preparation, run and input machines together, the connection machine with the admission and
## Core's own turn machine following them (turn_follows_its_run),
## two workspace writes over two faults, a permission request on a Run, two workspace reads and two exports over two faults,
## one suspension attempt on a live connection (its answer_wait bound; see docs/model-check.md for faults)
model-check:
	$(GO) run ./cmd/agentwire check --bound ci
	$(GO) run ./cmd/agentwire check --bound ci --machines connection,preparation,run,turn --depth 14
	$(GO) run ./cmd/agentwire check --bound ci --machines workspace_write --writes 2 --faults 2 --depth 16
	$(GO) run ./cmd/agentwire check --bound ci --machines run,interaction --asks 1 --depth 18
	$(GO) run ./cmd/agentwire check --bound ci --machines workspace_read --reads 2 --faults 2 --depth 16
	$(GO) run ./cmd/agentwire check --bound ci --machines workspace_export --exports 2 --faults 2 --depth 16
	$(GO) run ./cmd/agentwire check --bound ci --machines suspension --faults 0 --depth 20

## chaos: a real Core (SQLite) and two real Runtimes (echo-agent through the exec adapter) run
## CHAOS_TURNS Turns with active input and permission answers while a proxy cuts their connections
## and Core and the Runtimes are SIGKILLed and restarted at random moments; then the checker proves
## from the store, Core's transcripts and the agents' logs that no Turn was lost, invented or
## replayed (docs/chaos.md). SEED=N replays a run's schedule (0: a new seed, printed).
SEED ?= 0
CHAOS_TURNS ?= 200
CHAOS_KILLS ?= 20
CHAOS_CUTS ?= 60
CHAOS_BUDGET ?= 7m
.PHONY: chaos
chaos:
	$(GO) build -o bin/agentwire ./cmd/agentwire
	$(GO) build -o bin/echo-agent ./examples/echo-agent
	$(GO) build -o bin/agentwire-chaos ./cmd/agentwire-chaos
	bin/agentwire-chaos -seed $(SEED) -turns $(CHAOS_TURNS) -kills $(CHAOS_KILLS) -cuts $(CHAOS_CUTS) -budget $(CHAOS_BUDGET)

## model-check-long: a longer bound (two Runs, two inputs, two faults); counterexamples go to model-check-out/
model-check-long:
	$(GO) run ./cmd/agentwire check --bound long --out model-check-out

.PHONY: soak
## soak: a real Core and two real Runtimes against hostile clients on loopback (cmd/agentwire/soak_test.go):
## 5,000 idle connections, 300 half-sent headers, 200 event-stream readers that never read, 500 bootstraps
## with a garbage credential and no body, 150 uploads stalled one byte short of 5 MiB and a delta flood,
## while a well-behaved project runs Turns for SOAK_SECONDS. Fails when Core's peak RSS passes 300 MiB,
## its files or goroutines pass their bounds, a well-behaved Turn fails or its p99 passes 5 s, or what
## the hostile clients held is not given back. Budget 5 minutes; needs ~6,000 open files on each side.
SOAK_SECONDS ?= 120
soak:
	set -o pipefail; AGENTWIRE_SOAK=1 SOAK_SECONDS=$(SOAK_SECONDS) $(GO) test -count=1 -run '^TestSoak$$' -v -timeout 10m ./cmd/agentwire/ \
		| grep -vE '^\s*=== (RUN|PAUSE|CONT)'


## bench: the benchmarks recorded in BENCHMARKS.md (Core's: Turns/s with SQLite and memory,
## delta latency to SSE, then 10,000 idle connections from a separate process, measured once; a real
## Codex Turn through the daemon against a direct app-server client, skipped without make harnesses)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./fsm/ ./wire/ ./internal/peer/ ./runtime/daemon/
	$(GO) test -run '^$$' -bench 'TurnsThroughCore|DeltaLatencyToSSE' -benchmem -count 3 ./internal/core/server/
	AGENTWIRE_BENCH_DIR=/dev/shm $(GO) test -run '^$$' -bench 'WorkspaceTransfer' -benchmem -count 3 ./internal/core/server/
	$(GO) test -run '^$$' -bench 'IdleConnections' -benchtime 1x ./internal/core/server/
	$(GO) test -run '^$$' -bench 'CodexTurnOverhead' -benchtime 40x -count 3 ./runtime/adapters/codex/

## bench-smoke: every benchmark once (one iteration each), so that CI notices a benchmark that
## no longer runs; the 10,000-connection one is left to make bench
bench-smoke:
	$(GO) test -run '^$$' -bench . -benchtime 1x -skip IdleConnections ./...

## fuzz: run every fuzz target of FUZZ_PKGS in turn (FUZZTIME=10m make fuzz for a long run).
## FUZZTIME also takes an execution count (FUZZTIME=3000x), which CI uses: a
## wall-clock limit can end in a spurious "context deadline exceeded" on Go 1.26
## (golang/go#75804).
FUZZTIME ?= 60s
FUZZMINIMIZE ?= 10s
FUZZ_PKGS := ./spec ./wire
fuzz:
	@set -e; for pkg in $(FUZZ_PKGS); do \
		for name in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "fuzz $$name in $$pkg for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) $$pkg; \
		done; \
	done

## demo: a real Core and a real Runtime (exec adapter, examples/echo-agent) run one Turn:
## deltas, a permission question answered, one active input, done. Prints the frames and
## writes demo-out/transcript.txt and demo-out/sequence.mmd
demo:
	@echo "building agentwire (a first build takes a minute or two)…"
	$(GO) build -o bin/agentwire ./cmd/agentwire
	bin/agentwire demo --out demo-out

## demo-codex: the same demo with the real Codex CLI (make harnesses installs it) in the Runtime
## (--harness codex), against a scripted model endpoint on 127.0.0.1, so it runs offline:
## a streamed answer, a shell command approved through the API that writes proof.txt in the
## workspace (read back through the files API), one active input mid-answer, done. Writes
## demo-out/codex/transcript.txt and demo-out/codex/sequence.mmd
.PHONY: demo-codex
demo-codex:
	@echo "building agentwire (a first build takes a minute or two)…"
	$(GO) build -o bin/agentwire ./cmd/agentwire
	bin/agentwire demo --harness codex --out demo-out/codex

## demo-claude: the same with the real Claude Code CLI (--harness claude); writes demo-out/claude/
.PHONY: demo-claude
demo-claude:
	@echo "building agentwire (a first build takes a minute or two)…"
	$(GO) build -o bin/agentwire ./cmd/agentwire
	bin/agentwire demo --harness claude --out demo-out/claude

## diagrams-browser-check: render docs/machines/*.mmd with the real Mermaid in headless
## Chromium and check every state shows its name (needs Chromium, node and npm; not in `test`)
diagrams-browser-check:
	bash internal/gen/diagram/browsercheck/check.sh

## harnesses: install the real coding-agent CLIs at the versions pinned in internal/runtime/harness/install
## (@openai/codex, @anthropic-ai/claude-code, @google/gemini-cli) with npm into $AGENTWIRE_HARNESS_DIR, else
## ~/.cache/agentwire/harnesses; no network when they are already there (needs node and npm)
.PHONY: harnesses check-harnesses
harnesses:
	$(GO) run ./cmd/agentwire-harnesses install

## check-harnesses: the real-harness tests (TestHarness*: the conformance kit against each real
## CLI, the adapters' own tests, the codex demo) against the installed CLIs; a CLI that is missing
## fails them here, where make test skips them. The kit's report (capabilities declared, scenarios
## run and passed) is printed for each adapter. Needs strace: each CLI's loopback-only proof
## runs it under strace, and fails here without it.
check-harnesses:
	set -o pipefail; AGENTWIRE_REQUIRE_HARNESSES=1 $(GO) test -race -count=1 -v -run '^TestHarness' ./runtime/... ./cmd/agentwire/ \
		| grep -vE '^\s*(=== (RUN|PAUSE|CONT|NAME)|--- PASS)'

