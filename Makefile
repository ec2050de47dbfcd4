# wafl — make targets. `make demo` and `make test` are the two commands a
# newcomer needs (see README.md).

GO      ?= go
BIN     := $(CURDIR)/bin
WAFL    := $(BIN)/wafl
EXAMPLES := $(CURDIR)/examples
DEMO    ?= ./...
BUG     ?=

.PHONY: all build test test-short bench lint demo repro corpus eval field field-runs hunt overhead coldbuild clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -o $(WAFL) ./cmd/wafl

# The test command CI runs (.ci/run): vet, then every test under the race
# detector, including the end-to-end corpus subset and the instrumentation
# corpus (real modules through the Go module proxy; skipped when it is not
# reachable); then the same in bench/, the evaluation harness's own module.
# About a minute on 2 cores with warm caches.
test:
	$(GO) vet ./... && $(GO) test -race -timeout 20m ./...
	cd bench && $(GO) vet ./... && $(GO) test -race -timeout 20m ./...

# Quick inner loop: skips the slow corpus tests.
test-short:
	$(GO) test -race -short ./...
	cd bench && $(GO) test -race -short ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./hook/... ./lcc/... ./record/... ./inject/... ./instrument/...

# wafl next to go test and go test -race on x/sync, conc, zap and ants:
# writes docs/benchmarks-overhead.md (bench/scripts/overhead.sh; ROUNDS=3).
overhead:
	bench/scripts/overhead.sh

# The instrumented build next to go test -c from a cold build cache, on
# x/sync and zap: a markdown table on stdout (bench/scripts/coldbuild.sh).
coldbuild:
	bench/scripts/coldbuild.sh

lint:
	$(GO) vet ./...
	cd bench && $(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Prepare and detect on the bundled example bugs and show the reports.
demo: build
	cd $(EXAMPLES) && $(WAFL) prepare $(DEMO)
	cd $(EXAMPLES) && $(WAFL) detect $(DEMO); status=$$?; \
	  if [ $$status -ne 0 ] && [ $$status -ne 1 ]; then exit $$status; fi; \
	  echo; echo "reports: $(EXAMPLES)/.wafl/reports/"; \
	  echo "examples/ is a corpus of known bugs, one package each, with a fixed twin (fixed/) that must stay silent:"; \
	  echo "finding them is the expected result. wafl detect exits 1 when it finds bugs; the demo treats that as success"; \
	  echo "and fails only on an error (exit 2)."
	@echo; echo "wafl vet: the static hints on the same packages, each marked by what the runs above showed"; \
	  echo "(confirmed: a detection run crashed there; exercised: a test ran both sides; untested: no test reached one)"
	cd $(EXAMPLES) && $(WAFL) vet $(DEMO); status=$$?; \
	  if [ $$status -ne 0 ] && [ $$status -ne 1 ]; then exit $$status; fi

# Reproduce one corpus bug: make repro BUG=<name>
repro: build
	@test -n "$(BUG)" || { echo "usage: make repro BUG=<name> (see examples/)"; exit 2; }
	WAFL=$(WAFL) bench/scripts/repro.sh $(BUG)

# Every corpus bug found and no fixed twin reported (bench/scripts/corpus.sh).
corpus: build
	WAFL=$(WAFL) bench/scripts/corpus.sh

# The corpus evaluation: writes docs/evaluation.md (bench/scripts/eval.sh).
eval: build
	WAFL=$(WAFL) bench/scripts/eval.sh

clean:
	rm -rf $(BIN) $(EXAMPLES)/.wafl

# Field benchmark: real bugs in real module versions fetched through the Go
# module proxy (bench/scripts/field/*.field). Not part of `make test`.
# make field            every bug (about 30-40 min on 2 cores)
# make field BUG=name   one bug; FIELDFLAGS="-tries 5 -runs 5 -plain 30" to change the effort
# (paths in FIELDFLAGS are relative to bench/)
FIELDFLAGS ?=
field: build
	cd bench && $(GO) run ./fieldbench/cmd/fieldbench -wafl $(WAFL) $(FIELDFLAGS) $(BUG)

# Field runs: wafl prepare + detect on pinned real modules
# (bench/scripts/fieldruns/modules.tsv), tabulated in docs/field-runs.md with
# the stored results of other labels (bench/scripts/fieldruns/results.json).
# make field-runs                      rerun the "after" column with bin/wafl
# make field-runs BEFORE=/tmp/wafl-before@8843844   rerun both columns
# make field-runs MOD="xsync zap"      only these modules
# FIELDRUNSFLAGS="-baseline-only"      only prepare vs plain go test (x/sync, zap)
# (paths in FIELDRUNSFLAGS are relative to bench/)
BEFORE ?=
AFTER  ?= $(WAFL)
MOD    ?=
FIELDRUNSFLAGS ?=
field-runs: build
	cd bench && $(GO) run ./fieldruns/cmd/fieldruns $(if $(BEFORE),-bin before=$(abspath $(BEFORE))) -bin after=$(abspath $(AFTER)) $(FIELDRUNSFLAGS) $(MOD)

# The hunt: go test, go test -race, wafl prepare and wafl detect --runs 3
# side by side on the pinned widely used modules of
# bench/scripts/hunt/modules.tsv; one result per module in
# bench/scripts/hunt/results/, rewrites docs/hunt.md. Not part of `make test`.
# make hunt                  every listed module without a stored result (resumes)
# make hunt MOD="xsync zap"  only these modules
# HUNTFLAGS="-force"         run modules with a stored result again
# HUNTFLAGS="-render"        only rewrite docs/hunt.md from the stored results
# (paths in HUNTFLAGS are relative to bench/)
HUNTFLAGS ?=
hunt: build
	cd bench && $(GO) run ./hunt/cmd/hunt -wafl $(WAFL) $(HUNTFLAGS) $(MOD)
