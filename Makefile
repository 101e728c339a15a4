# agentwire: every target works on a fresh machine with only Go installed;
# modules come from the Go module proxy at the versions pinned in go.mod.
GO ?= go
export PATH := $(PATH):/usr/local/go/bin

# Directories the generator owns (only files with the generated header).
GENERATED := fsm docs/machines

.PHONY: all generate verify-generate test test-short vet check-runtime-contract bench fuzz demo diagrams

all: generate test

## generate: validate spec/*.yaml and rewrite fsm/ and docs/machines/
generate:
	$(GO) run ./cmd/agentwire generate

## verify-generate: regenerate and fail if the result differs from what is committed
## (it also fails when a generated file is on disk but not committed to git)
verify-generate:
	$(GO) run ./cmd/agentwire generate --verify
	@untracked="$$(git ls-files --others --exclude-standard -- $(GENERATED) 2>/dev/null)"; \
	if [ -n "$$untracked" ]; then echo "verify-generate: generated files not committed:" >&2; echo "$$untracked" >&2; exit 1; fi

vet:
	$(GO) vet ./...

## test: vet, then every test with the race detector
test: vet
	$(GO) test -race -count=1 ./...

test-short: vet
	$(GO) test -race -short ./...

## check-runtime-contract: the protocol contract checks (spec tables, generated machines, generator)
check-runtime-contract:
	$(GO) test -race -count=1 ./spec/... ./fsm/... ./gen/...

## bench: the engine benchmarks recorded in BENCHMARKS.md
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./fsm/

## fuzz: longer fuzzing runs than CI does (FUZZTIME=10m make fuzz); each target in turn
FUZZTIME ?= 60s
FUZZ_TARGETS := ./spec:FuzzLoad ./spec:FuzzLoadEdits
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s $$pkg; \
	done

## demo: until the peers exist, regenerate the machines and print one diagram
demo: generate
	$(GO) run ./cmd/agentwire diagram preparation --format mermaid
