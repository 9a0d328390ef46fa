# forgehooks: every task a developer or CI runs. `make test` is what CI runs.
SHELL := /bin/bash
GO    ?= go
PKGS  := ./...

.PHONY: test test-long timing fmt-check vet tidy-check unit modules generate packages generate-check schema-latest schema-drift bench bench-peers bench-load bench-inbox fuzz schema spec-versions serve smee-client load chromium screenshots

## test: what CI runs: format check, vet, go.mod/go.sum tidy, generated-code freshness,
## race-enabled tests, and the same for the nested modules. The inspector's browser
## tests need Chromium: `make chromium` installs it (CI does). Every check runs even
## when one before it failed (the example modules too, after a failed unit test); the
## failed ones are listed at the end, and then make fails.
TEST_STEPS := fmt-check vet tidy-check generate-check unit modules
test: chromium
	@failed=""; \
	for step in $(TEST_STEPS); do \
	  echo "== make $$step"; \
	  $(MAKE) --no-print-directory $$step || failed="$$failed $$step"; \
	done; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed"; exit 1; fi; \
	echo "make test: every check passed"

## timing: the tests whose bounds are the product's own deadlines (the forge's 10 s),
## with the defaults (FORGEHOOKS_TIMING=1). `make test` runs them with bounds wide
## enough for a loaded machine (a second suite beside it). Not in CI: it needs an idle
## machine (it fails with a second suite beside it), see CONTRIBUTING.md.
TIMING_TESTS := ^(TestServeLargeDeliveries|TestServeFairShare|TestOrderedFleetWorkKilled)$$
timing:
	FORGEHOOKS_TIMING=1 $(GO) test -count=1 -run '$(TIMING_TESTS)' ./cmd/forgehooks

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

## tidy-check: fail when `go mod tidy` would change go.mod or go.sum (a direct
## dependency marked indirect, say).
tidy-check:
	$(GO) mod tidy -diff

## unit: the race-enabled tests of every package, read through internal/testreport,
## which prints go test's own lines (ok per package, the output of failed tests) and
## then each package's time and the slowest ten tests; it fails when a test failed.
## Past Go's default of 10 minutes a package: the inbox's cluster tests run three
## JetStream servers, and on a 2-core machine with a second suite beside it that
## package alone takes longer.
unit:
	@set -o pipefail; $(GO) test -race -count=1 -timeout 30m -json $(PKGS) | $(GO) run ./internal/testreport

## test-long: the unit step with the soak, scale and attack tests that `make test`
## skips (internal/longtest: FORGEHOOKS_LONG=1). Not in CI: see CONTRIBUTING.md.
test-long:
	FORGEHOOKS_LONG=1 $(MAKE) --no-print-directory unit

## modules: tidy, vet and test the nested modules that build against this checkout and
## may depend on what the SDK must not: the Lambda adapter (lambda/: aws-lambda-go), the
## examples (examples/*/go.mod: chi, OpenTelemetry) and the test of the Prometheus
## exporter with expfmt.
MODULES := lambda/ $(dir $(wildcard examples/*/go.mod)) internal/promtext/expfmtcheck/
## Every module runs; the failed ones are listed at the end.
modules:
	@failed=""; \
	for d in $(MODULES); do echo "== $$d"; \
	  (cd $$d && $(GO) mod tidy -diff && $(GO) vet ./... && $(GO) test -race -count=1 ./...) || failed="$$failed $$d"; \
	done; \
	if [ -n "$$failed" ]; then echo "modules: FAILED:$$failed"; exit 1; fi

## generate: regenerate package payloads from the committed schema/ (the importer does not
## run: schema/ is committed, see `make schema`), and the example module's package generated
## from a schema of its own. It fails when schema/packages.yaml lacks what the schema has:
## `make packages` records it. Then the corpus's generated samples (cmd/gensamples): one for each
## name without an example.
generate:
	$(GO) generate ./payloads
	cd examples/customschema && $(GO) generate ./forgepayloads
	$(GO) run ./cmd/gensamples -schema schema -corpus internal/corpus/testdata

## packages: the explicit step that writes schema/packages.yaml (the generated package of
## each event and type), extended for what a schema update added; generation only reads it.
packages:
	$(GO) run ./cmd/genpayloads -schema schema -out payloads -write-packages

## generate-check: fail when schema/ is not what the importer makes of the pinned spec and
## overrides (checked in memory, nothing written), or when `make generate` would change a
## committed file.
generate-check:
	$(GO) run ./cmd/importschema -check -q
	@if [ -n "$$(ls payloads/*.go 2>/dev/null)" ]; then \
	  $(MAKE) --no-print-directory generate && \
	  git diff --exit-code --stat -- payloads schema examples/customschema internal/corpus/testdata/generated && \
	  test -z "$$(git status --porcelain -- payloads schema examples/customschema internal/corpus/testdata/generated)" || { echo "generated code is stale: run make generate and commit"; exit 1; }; \
	fi

## schema: re-import schema/ from the committed spec and overrides, extend
## schema/lock.yaml, and report what changed (a section of CHANGELOG.md when the schema
## changed). With VERSION=x (a number, or a tag such as latest), first fetch that version
## of the forge's published webhook spec with npm pack (the one step that needs the
## network); REST_VERSION=y does the same for the second source, @octokit/openapi's
## x-webhooks (VERSION=latest fetches the latest of both; REST_VERSION=none drops it);
## nothing is replaced unless the whole import succeeds. REPORT_JSON=file also
## writes the report as JSON; FAIL_ON_BREAKING=1 exits non-zero when the update breaks
## compiled code (after writing).
SCHEMA_SPEC      := schema/source/api.github.com.json.gz
SCHEMA_OVERRIDES := schema/overrides.yaml
schema:
	$(GO) run ./cmd/importschema $(if $(VERSION),-fetch $(VERSION)) $(if $(REST_VERSION),-fetch-rest $(REST_VERSION),$(if $(filter latest,$(VERSION)),-fetch-rest latest)) -spec $(SCHEMA_SPEC) -overrides $(SCHEMA_OVERRIDES) -out schema \
	  -changelog CHANGELOG.md $(if $(REPORT_JSON),-report-json $(REPORT_JSON)) $(if $(FAIL_ON_BREAKING),-fail-on-breaking)
	$(MAKE) --no-print-directory packages

## schema-drift: what the forge's TypeScript types (@octokit/openapi-webhooks-types,
## TYPES_VERSION, default latest; needs the network) know that schema/ does not: event
## and action names, payload members. Exit 1 when the list is not empty: add the names
## to schema/overrides.yaml (events, names, fields, each with a reason) or update.
TYPES_VERSION ?= latest
schema-drift:
	$(GO) run ./cmd/importschema -drift $(TYPES_VERSION) -out schema

## schema-latest: make schema VERSION=latest (the newest of both sources), then make generate.
schema-latest:
	$(MAKE) --no-print-directory schema VERSION=latest
	$(MAKE) --no-print-directory generate

## spec-versions: the project's tests at other published versions of the forge's webhook
## spec (needs the network for npm pack; not in `make test`): for each of VERSIONS, in a
## scratch copy of the working tree (this checkout's schema/ stays as it is), make schema
## VERSION=v, make generate, the importer's -check, go vet, the tests of every package that
## compiles payloads or reads schema/ (-short), and the example modules (.ci/spec-versions).
## SPEC_SKIP_SLOW=1 leaves out cmd/forgehooks's tests. Logs: bin/spec-versions/VERSION.log.
VERSIONS ?= 5.3.2 8.3.0 8.5.1 11.0.0 12.0.3
spec-versions:
	SPEC_SKIP_SLOW=$(SPEC_SKIP_SLOW) .ci/spec-versions $(VERSIONS)

## bench: the SDK's own benchmarks.
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## bench-peers: forgehooks against go-github and go-playground/webhooks and the floors
## (module bench/, which `make test` does not touch). First the go-cmp identity check of
## typed decoding against the benchmark's encoding/json baseline (also in `make test`)
## and the list of payloads the peers refuse, then ROUNDS runs of every benchmark one
## after another (ratios are taken within a run, so load changes between runs cancel
## out), then the tables of bench/README.md. Raw output: bench/results/rounds.txt.
ROUNDS    ?= 5
BENCHTIME ?= 1s
bench-peers:
	$(GO) test -count=1 -run 'TestDecodeIdenticalToEncodingJSON' ./payloads
	cd bench && $(GO) test -count=1 -v -run 'TestCommon' . | grep -E '^(ok|FAIL|---)|payloads accepted'  | cut -c1-160
	cd bench && mkdir -p results && $(GO) test -c -o results/bench.test . && : > results/rounds.txt && \
	for i in $$(seq $(ROUNDS)); do \
	  echo "round $$i of $(ROUNDS) (load: $$(cut -d' ' -f1-3 /proc/loadavg))"; \
	  ./results/bench.test -test.run '^$$' -test.bench . -test.benchmem -test.benchtime $(BENCHTIME) | tee -a results/rounds.txt | grep '^Benchmark'; \
	done
	cd bench && $(GO) run ./cmd/benchtable -in results/rounds.txt -readme README.md -cmd 'make bench-peers ROUNDS=$(ROUNDS)'

## bench-load: HTTP over 127.0.0.1: `forgehooks serve` and the receivers of bench/cmd/load
## (net/http alone, bare HMAC + scan, forgehooks raw and typed, go-github, each a process
## with GOMAXPROCS=1, and the Node.js library under node, pinned in cmd/load/node.go, which the load
## tool installs with npm into $FORGEHOOKS_NPM_CACHE or ~/.cache/forgehooks/npm, and leaves
## out with a message when node or npm is missing), LOAD_N requests or LOAD_TIME each,
## LOAD_ROUNDS rounds; every receiver runs on the last CPU, the load on the others (taskset);
## requests/s, p50/p99 and server CPU per request into bench/README.md. Then the peer
## configuration of issue 46 (PEER_C=16 keep-alive connections, PEER_TIME per receiver,
## PEER_ROUNDS interleaved rounds, a typed receiver with a handler for every event),
## which prints typed-all ÷ bare, raw ÷ bare and typed-all ÷ go-github, into the
## README's load-peer section.
LOAD_N      ?= 20000
LOAD_TIME   ?= 20s
LOAD_C      ?= 4
LOAD_ROUNDS ?= 3
PEER_N      ?= 1000000
PEER_TIME   ?= 10s
PEER_C      ?= 16
PEER_ROUNDS ?= 3
bench-load:
	mkdir -p bench/results
	$(GO) build -o bench/results/forgehooks ./cmd/forgehooks
	cd bench && $(GO) build -o results/load ./cmd/load && \
	./results/load -forgehooks results/forgehooks -n $(LOAD_N) -duration $(LOAD_TIME) -c $(LOAD_C) -rounds $(LOAD_ROUNDS) -readme README.md && \
	./results/load -servers nethttp,bare,raw,typed-all,go-github,node -n $(PEER_N) -duration $(PEER_TIME) -c $(PEER_C) -rounds $(PEER_ROUNDS) -readme README.md -section load-peer

## bench-inbox: the durable path at one core (issue 43), into nothing but the terminal:
## the JetStream floor (bench/cmd/load's jsfloor: HMAC, publish to an embedded file
## stream, 200 after the ack, a consumer that fetches and acks), `forgehooks serve`,
## `forgehooks serve --inbox` and the inbox in process, each pinned to the last CPU with
## GOMAXPROCS=1, INBOX_C keep-alive connections, every request a body of its own
## (-unique), INBOX_ROUNDS interleaved rounds of INBOX_TIME each. INBOX_BASELINE=path to
## an earlier forgehooks binary adds its serve and serve --inbox rows to the same rounds.
## The figures and the command that made them: bench/README.md, "The durable path at one core".
comma          := ,
INBOX_TIME     ?= 5s
INBOX_ROUNDS   ?= 3
INBOX_C        ?= 64
INBOX_BASELINE ?=
bench-inbox:
	mkdir -p bench/results
	$(GO) build -o bench/results/forgehooks ./cmd/forgehooks
	cd bench && $(GO) build -o results/load ./cmd/load && \
	./results/load -forgehooks results/forgehooks -unique -c $(INBOX_C) -n 10000000 -duration $(INBOX_TIME) -warmup 2000 -rounds $(INBOX_ROUNDS) \
	  $(if $(INBOX_BASELINE),-baseline $(abspath $(INBOX_BASELINE)) -servers jsfloor$(comma)serve$(comma)serve-base$(comma)serve-inbox$(comma)serve-inbox-base$(comma)inbox,-servers jsfloor$(comma)serve$(comma)serve-inbox$(comma)inbox)

## fuzz: run every fuzz target of every package (FUZZPKGS, default all) for FUZZTIME
## each (default 30s). It goes on past a failure and lists every failing target at
## the end; a failing input is saved under the package's testdata/fuzz, where
## `make test` then runs it. `make test` runs the seed corpora only.
FUZZTIME ?= 30s
FUZZPKGS ?= ./...
fuzz:
	@failed=""; n=0; \
	for pkg in $$($(GO) list $(FUZZPKGS)); do \
	  list=$$($(GO) test -list '^Fuzz' $$pkg) || { echo "== $$pkg: does not build"; failed="$$failed $$pkg"; continue; }; \
	  for t in $$(echo "$$list" | grep '^Fuzz'); do \
	    n=$$((n+1)); echo "== $$pkg $$t ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || failed="$$failed $$pkg.$$t"; \
	  done; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: $$n targets run; failed:$$failed"; exit 1; fi; \
	echo "fuzz: $$n targets run for $(FUZZTIME) each; no failure"

## load: the load test at a bigger size than `make test` runs (LOADTEST_N deliveries,
## LOADTEST_C clients, on 127.0.0.1), without -race; it prints requests/s, p50/p99 and
## peak heap. (bench-load's LOAD_N and LOAD_C are another tool's.)
LOADTEST_N ?= 200000
LOADTEST_C ?= 64
load:
	$(GO) test -count=1 -run '^TestLoad$$' -v ./webhooks -load.n=$(LOADTEST_N) -load.c=$(LOADTEST_C)

## serve: build forgehooks and run a receiver on SERVE_ADDR (default 127.0.0.1:3000) with a
## durable inbox in INBOX_DIR (default .forgehooks/inbox in the checkout; `forgehooks inbox ls
## --inbox .forgehooks/inbox` lists it, also while serve runs) and the delivery inspector
## page on UI_ADDR (default 127.0.0.1:3001; UI_ADDR= turns it off). The secret is
## FORGE_WEBHOOK_SECRET; when it is unset, a development secret, never to be used on a
## real webhook (the binary itself never invents one): export the same for `forgehooks
## send`. The recipe execs the built binary, so that stopping make (its PID, or Ctrl-C)
## stops the receiver too: `go run` would leave its child holding the ports.
DEV_SECRET := forgehooks-development-secret-not-for-real-webhooks
SERVE_ADDR ?= 127.0.0.1:3000
INBOX_DIR  ?= .forgehooks/inbox
UI_ADDR    ?= 127.0.0.1:3001
SERVE_BIN  ?= .forgehooks/bin/forgehooks
serve:
	@mkdir -p $(dir $(SERVE_BIN)) && $(GO) build -o $(SERVE_BIN) ./cmd/forgehooks
	@if [ -z "$$FORGE_WEBHOOK_SECRET" ]; then \
	  echo "make serve: FORGE_WEBHOOK_SECRET is unset; using the development secret \"$(DEV_SECRET)\""; \
	  echo "make serve: to send to it: export FORGE_WEBHOOK_SECRET=$(DEV_SECRET)"; \
	fi
	@if [ -n "$(UI_ADDR)" ]; then echo "make serve: the inspector page is at http://$(UI_ADDR)/"; fi
	@FORGE_WEBHOOK_SECRET="$${FORGE_WEBHOOK_SECRET:-$(DEV_SECRET)}" exec $(SERVE_BIN) serve --addr $(SERVE_ADDR) --inbox $(INBOX_DIR) $(if $(UI_ADDR),--ui $(UI_ADDR))

## chromium: install Debian's chromium for the inspector's browser tests, when no
## chromium is on $$PATH (they skip without it, and fail under CI=true).
chromium:
	@if command -v chromium >/dev/null 2>&1; then echo "chromium: $$(command -v chromium)"; \
	else \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends chromium; \
	fi

## screenshots: the inspector's browser test writes the screenshots of its fixed demo
## data set to docs/screenshots (committed; the README shows them).
screenshots: chromium
	FORGEHOOKS_SCREENSHOTS=$(CURDIR)/docs/screenshots $(GO) test -count=1 -run '^TestBrowserScreenshots$$' -v ./inspector

## smee-client: install the npm package the interop test runs, into a cache outside the
## repository (the test installs it by itself when missing; keep the version in step with
## smeeClientVersion in cmd/forgehooks/smee_test.go).
SMEE_CLIENT_VERSION := 5.0.0
smee-client:
	npm install --prefix "$${FORGEHOOKS_NPM_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/forgehooks/npm}/smee-client-$(SMEE_CLIENT_VERSION)" \
	  --no-save --no-audit --no-fund --no-package-lock smee-client@$(SMEE_CLIENT_VERSION)
