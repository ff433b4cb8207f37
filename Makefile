# Codex Relay. `make run` and `make test` set up a fresh Debian/Ubuntu machine themselves.
SHELL := /bin/bash
BIN   := bin/codexrelay
GO    ?= go
export CGO_ENABLED := 1

.PHONY: all deps test-deps build run serve test check fmt vet unit fuzz-short fuzz bench clean

all: build

deps:
	@bash packaging/install-deps.sh build

test-deps:
	@bash packaging/install-deps.sh test

build: deps
	$(GO) build -trimpath -o $(BIN) .

## run: install what is missing, build, start the tray app
run: build
	./$(BIN)

## serve: the proxy headless in the foreground
serve: build
	./$(BIN) serve

## test: install what is missing, then every check and test (what CI runs)
test: test-deps check unit fuzz-short

check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Every test, with the race detector, inside a private D-Bus session with a real Secret Service.
unit:
	.ci/with-keyring $(GO) test -race -count=1 ./...

# A few seconds of each fuzz target; `make fuzz` runs them longer.
FUZZTIME ?= 5s
fuzz-short:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./proxy/payload/
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME) ./proxy/sse/

fuzz:
	$(MAKE) fuzz-short FUZZTIME=2m

bench: build
	./$(BIN) bench serialization --samples 500 --items 10000 --attempts 3

clean:
	rm -rf bin
