# Codex Relay. `make run` and `make test` set up a fresh Debian/Ubuntu machine themselves.
SHELL := /bin/bash
BIN   := bin/codexrelay
GO    ?= go
export CGO_ENABLED := 1
# no_emoji leaves out Fyne's 4 MB colour emoji font: the windows show no emoji of their own (an
# emoji in an account's name still comes from a system font), and parsing it once per text style
# cost each window process 0.09 s before its first window (issue 39).
TAGS  := no_emoji

.PHONY: all deps test-deps build run serve test check fmt vet unit fuzz-short fuzz bench reload-latency cross clean

all: build

deps:
	@bash packaging/install-deps.sh build

test-deps:
	@bash packaging/install-deps.sh test

build: deps
	$(GO) build -tags $(TAGS) -buildvcs=auto -trimpath -o $(BIN) .

## run: install what is missing, build, start the tray app
run: build
	./$(BIN)

## serve: the proxy headless in the foreground
serve: build
	./$(BIN) serve

## test: install what is missing, then every check and test (what CI runs)
test: test-deps check unit fuzz-short cross deb-test msi-test

# gofmt, go vet and staticcheck (built into bin/ from the Go module proxy, at the version named
# here) stay clean.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := bin/staticcheck-$(STATICCHECK_VERSION)
check: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

$(STATICCHECK):
	@mkdir -p bin
	GOBIN=$(CURDIR)/bin/.staticcheck $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv bin/.staticcheck/staticcheck $@ && rmdir bin/.staticcheck

# npm's openai, the official Node SDK, for the relay's SDK test (proxy/sdknode_test.go), installed into
# bin/ once at the version named here: 6.x is the last line that runs on Node 20 (7.x wants Node 22).
OPENAI_NODE_VERSION := 6.49.0
OPENAI_NODE := bin/openai-node-$(OPENAI_NODE_VERSION)
$(OPENAI_NODE)/node_modules/openai/package.json:
	@command -v npm >/dev/null 2>&1 || bash packaging/install-deps.sh test
	mkdir -p $(OPENAI_NODE)
	cd $(OPENAI_NODE) && npm install --silent --no-audit --no-fund --save-exact "openai@$(OPENAI_NODE_VERSION)" >/dev/null

# Every test, with the race detector, inside a private D-Bus session with a real Secret Service.
unit: $(OPENAI_NODE)/node_modules/openai/package.json
	OPENAI_NODE_MODULES=$(CURDIR)/$(OPENAI_NODE)/node_modules .ci/with-keyring $(GO) test -race -count=1 ./...

# A few seconds of each fuzz target (request parser, array splitter, SSE reader, both bridges); `make fuzz`
# runs them longer. The short run counts executions, not seconds: with a duration, Go 1.26's fuzzing
# coordinator can fail a healthy target with "context deadline exceeded" when the time runs out while a
# busy machine's worker is mid-call (go.dev/issue/75804, fixed in Go 1.27).
FUZZTIME ?= 20000x
FUZZ = $(GO) test -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1000x
fuzz-short:
	$(FUZZ) -fuzz '^FuzzParse$$' ./proxy/payload/
	$(FUZZ) -fuzz '^FuzzElements$$' ./proxy/payload/
	$(FUZZ) -fuzz '^FuzzReader$$' ./proxy/sse/
	$(FUZZ) -fuzz '^FuzzResponsesStream$$' ./proxy/bridge/
	$(FUZZ) -fuzz '^FuzzChatStream$$' ./proxy/bridge/

fuzz:
	$(MAKE) fuzz-short FUZZTIME=2m

## bench: every benchmark (seed 000, seed 001, the relay's overhead); figures in docs/performance.md
bench: build
	./$(BIN) bench serialization --samples 500 --items 10000 --attempts 3
	./$(BIN) bench catalog --samples 50 --concurrent 8 --delay-ms 50
	./$(BIN) bench proxy

## codex-e2e: the real Codex CLI (npm @openai/codex 0.171.0, fetched into bin/ once) through the relay
## and two ChatGPT accounts on a fake ChatGPT backend: gpt-5.6-sol's tool loop (Responses Lite) across a
## rotation, over HTTP, over a client socket served by HTTP, and socket to socket; web search and images,
## /status and Esc in the TUI, a remote compaction re-made after a rotation, and after a restart of the
## relay (compact-restart). E2E_ONLY="compact compact-restart" runs only the paths named.
.PHONY: codex-e2e
codex-e2e: build test-deps
	.ci/with-keyring bash packaging/codex-e2e/run.sh $(BIN)

## itemismenu: the tray item's ItemIsMenu and Title read from the bus over 50 starts under load, with the
## fix and in the order before it (issue 46)
.PHONY: itemismenu
itemismenu: test-deps
	.ci/with-keyring sh ui/tray/testdata/itemismenu.sh 50 4
	.ci/with-keyring sh ui/tray/testdata/itemismenu.sh 50 4 late

## reload-latency: how long a running relay takes to apply a change made from the CLI (median of 40)
reload-latency: build test-deps
	.ci/with-keyring .ci/reload-latency $(BIN)

## cross: the Windows executable (cgo with Debian's mingw-w64 cross compiler, GUI subsystem: no console
## window) -> bin/codexrelay.exe, which type-checks every package for Windows; go vet for Windows and for
## macOS of every package that builds without cgo there (app, proxy, assets; ui and main need cgo for
## Fyne's driver and, on macOS, systray and the SDK). The first Windows build compiles GLFW and go-gl with
## mingw-w64: about 10 minutes on two busy cores; later builds take seconds.
WINDOWS := GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC=x86_64-w64-mingw32-gcc
cross:
	@bash packaging/install-deps.sh cross
	$(WINDOWS) $(GO) build -tags $(TAGS) -trimpath -ldflags -H=windowsgui -o bin/codexrelay.exe .
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) vet ./app/... ./proxy/... ./assets/...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./app/... ./proxy/... ./assets/...

clean:
	rm -rf bin

# --- Desktop: screenshot, package, install -------------------------------------------------

.PHONY: screenshot package install

## screenshot: the dashboard, the first-run card, the accounts and usage windows with prepared figures, in
## real windows under Xvfb, light and dark -> assets/*.png (assets/screenshot.png: the light dashboard)
screenshot:
	@bash packaging/install-deps.sh shot
	$(GO) build -tags $(TAGS) -o bin/screenshot ./ui/cmd/screenshot
	bash ui/cmd/screenshot/shoot-all.sh bin/screenshot

## idle: the tray process's CPU and memory at idle over a minute beside a bare fyne.io/systray tray
## (targets: below 0.2% of a core and 60 MB), a window's latency from the tray click and the window
## process's exit after its last window closes (targets: 1 s, 2 s); then the dashboard open, beside a
## bare Fyne app. Under Xvfb with a StatusNotifier host, a private keyring and a throw-away home.
.PHONY: idle e2e
idle: build
	@bash packaging/install-deps.sh shot
	$(GO) build -tags $(TAGS) -o bin/screenshot ./ui/cmd/screenshot
	$(GO) build -o bin/baretray ./ui/cmd/baretray
	bash ui/cmd/screenshot/split.sh $(BIN) bin/baretray 60 3 bin/screenshot
	bash ui/cmd/screenshot/idle.sh $(BIN) 60 bin/screenshot

## e2e: the two processes end to end, briefly: the tray registers with its account's line, a click
## opens the dashboard in a window process, closing it ends that process, the relay keeps serving
e2e: build
	@bash packaging/install-deps.sh shot
	$(GO) build -o bin/baretray ./ui/cmd/baretray
	bash ui/cmd/screenshot/split.sh $(BIN) bin/baretray 3 1

FYNE_TOOL ?= $(GO) run fyne.io/tools/cmd/fyne@v1.7.4
PKG       := bin/codexrelay-linux.tar.xz
## package: the Linux release tarball (binary, desktop entry, icon, a Makefile with user-install) -> bin/
# fyne increments Build in FyneApp.toml on every run: the file is put back afterwards.
package: deps
	@mkdir -p bin && cp FyneApp.toml bin/.FyneApp.toml.orig
	$(FYNE_TOOL) package -os linux -icon assets/icon.png --release; st=$$?; \
	  cp bin/.FyneApp.toml.orig FyneApp.toml && rm -f bin/.FyneApp.toml.orig; \
	  if [ $$st -eq 0 ]; then mv -f "Codex Relay.tar.xz" $(PKG) && echo "package: $(PKG)"; fi; exit $$st

## install: install the package for this user (~/.local/bin, menu entry, icon); builds it first if needed
install:
	@[ -f $(PKG) ] || $(MAKE) package
	@tmp=$$(mktemp -d) && tar -xJf $(PKG) -C "$$tmp" && \
	  mk=$$(find "$$tmp" -maxdepth 2 -name Makefile | head -n 1) && \
	  $(MAKE) --no-print-directory -C "$$(dirname "$$mk")" user-install; st=$$?; rm -rf "$$tmp"; \
	  if [ $$st -eq 0 ]; then echo "installed ~/.local/bin/codexrelay and its menu entry (see packaging/README.md for autostart and systemd)"; fi; exit $$st

# --- Installable packages: .deb (nfpm), MSI (msitools' wixl) ---------------------------------------

# One version: FyneApp.toml's, stamped into the binary (app.Version) and into each package.
VERSION   := $(shell sed -n 's/^ *Version *= *"\(.*\)"/\1/p' FyneApp.toml)
LDVERSION := -X github.com/codexrelay/codexrelay/app.Version=$(VERSION)
NFPM_VERSION := v2.43.0
NFPM := bin/nfpm-$(NFPM_VERSION)
DEB  := bin/codexrelay_$(VERSION)_amd64.deb
MSI  := bin/codexrelay-$(VERSION)-x64.msi
.PHONY: deb deb-test msi msi-test macos

$(NFPM):
	@mkdir -p bin
	GOBIN=$(CURDIR)/bin/.nfpm $(GO) install github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)
	mv bin/.nfpm/nfpm $@ && rmdir bin/.nfpm

## deb: the Debian package (binary, desktop entry, hicolor icons, systemd user unit, changelog) -> bin/
deb: deps $(NFPM)
	$(GO) build -tags $(TAGS) -buildvcs=auto -trimpath -ldflags "$(LDVERSION)" -o bin/deb/codexrelay .
	rm -rf bin/deb/icons && $(GO) run ./packaging/icons assets/icon.png bin/deb/icons
	sed 's|%h/.local/bin/codexrelay|/usr/bin/codexrelay|; s|^# Install:.*|# Enable:   systemctl --user enable --now codexrelay|; /daemon-reload/d' \
	  packaging/codexrelay.service > bin/deb/codexrelay.service
	CODEXRELAY_VERSION=$(VERSION) $(NFPM) package -f packaging/deb/nfpm.yaml -p deb -t $(DEB)
	@ls -l $(DEB)

## deb-test: installs the .deb into a clean dpkg root, runs version and serve on loopback, then serve as the packaged
## user unit runs it inside the unit's sandbox and checks that a request lands in the usage ledger, purges it, checks
## nothing is left
deb-test: deb
	@bash packaging/install-deps.sh package
	$(GO) build -o bin/deb/upstream ./packaging/deb/upstream
	.ci/with-keyring bash packaging/deb/install-test.sh $(DEB) bin/deb/upstream

## msi: the per-user Windows installer (Start menu entry, icon, uninstall, start at login as an option) from
## the cross-built codexrelay.exe, with msitools' wixl -> bin/
msi:
	@bash packaging/install-deps.sh cross
	@bash packaging/install-deps.sh package
	$(WINDOWS) $(GO) build -tags $(TAGS) -trimpath -ldflags "-H=windowsgui $(LDVERSION)" -o bin/msi/codexrelay.exe .
	$(GO) run ./packaging/icons assets/icon.png bin/msi/icons && mv bin/msi/icons/codexrelay.ico bin/msi/
	wixl -a x64 -D Version=$(VERSION) -o $(MSI) packaging/msi/codexrelay.wxs
	@ls -l $(MSI)

## msi-test: validates the MSI's tables (msiinfo) and its codexrelay.exe (msiextract) without Windows
msi-test: msi
	bash packaging/msi/check.sh $(MSI) bin/msi/codexrelay.exe $(VERSION)

## macos: what can be made here of the macOS app (packaging/MACOS.md says which steps need a Mac):
## Codex Relay.app's Info.plist (LSUIElement), its icon set and the Homebrew cask -> bin/macos/
macos:
	rm -rf bin/macos && mkdir -p "bin/macos/Codex Relay.app/Contents/Resources/codexrelay.iconset"
	sed 's/@VERSION@/$(VERSION)/g' packaging/macos/Info.plist > "bin/macos/Codex Relay.app/Contents/Info.plist"
	sed 's/@VERSION@/$(VERSION)/g' packaging/macos/codex-relay.rb > bin/macos/codex-relay.rb
	$(GO) run ./packaging/icons assets/icon.png bin/macos/icons
	set -e; cd bin/macos/icons; set=../"Codex Relay.app/Contents/Resources/codexrelay.iconset"; \
	  for n in 16 32 128 256; do cp $${n}x$${n}/apps/codexrelay.png "$$set"/icon_$${n}x$${n}.png; done; \
	  for n in 16 32 128; do d=$$((n*2)); cp $${d}x$${d}/apps/codexrelay.png "$$set"/icon_$${n}x$${n}@2x.png; done
	rm -rf bin/macos/icons
	@find bin/macos -type f | sort
