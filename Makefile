# forgehooks: every task a developer or CI runs. `make test` is what CI runs.
SHELL := /bin/bash
GO    ?= go
PKGS  := ./...

.PHONY: test fmt-check vet unit generate generate-check bench fuzz schema serve

## test: what CI runs: format check, vet, generated-code freshness, race-enabled tests.
test: fmt-check vet generate-check unit

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -count=1 $(PKGS)

## generate: regenerate package payloads from schema/.
generate:
	$(GO) generate ./payloads/...

## generate-check: fail when `make generate` would change a committed file.
generate-check:
	@if [ -n "$$(ls payloads/*.go 2>/dev/null)" ]; then \
	  $(MAKE) --no-print-directory generate && \
	  git diff --exit-code --stat -- payloads schema || { echo "generated code is stale: run make generate and commit"; exit 1; }; \
	fi

## bench: the SDK's own benchmarks.
bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## fuzz: run every fuzz target of every package for FUZZTIME each (default 30s).
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

## serve: run a receiver on 127.0.0.1:3000 (secret from FORGE_WEBHOOK_SECRET, or a local default).
serve:
	$(GO) run ./cmd/forgehooks serve
