// Package app is Codex Relay's composition root: everything a process of the relay knows
// besides the proxy's request path. The tray process, the window process and the command
// line each hold one App over one settings folder, and act through its methods; none reaches
// into the proxy's internals.
//
// Its two sources of truth are the settings file (settings.go: read under a cross-process lock
// and re-read before each change, so that no process writes a whole in-memory copy over it)
// and the operating system's keychain (keychain*.go, credentials.go: the accounts' secrets and
// the local API key, never written anywhere else). A running relay follows both: watch.go
// notices the file change, and App.apply hands the proxy what changed.
//
// By job:
//
//	settings.go, settingstable.go, live.go   the file, its table of settings (a setting is its row) and the setters
//	app.go, config.go, memory.go             Open: the proxy built from the settings and the environment
//	accounts.go, fields.go, credentials.go   the account store and each account's credential
//	oauth.go, browser.go, codex.go, codexfiles.go  signing in, and the Codex CLI's own login and config.toml
//	codexenv.go, codexundo.go                Codex's .env (SSL_CERT_FILE, NO_PROXY), and undoing what a write did (--remove)
//	loopca.go, codexbundle.go                the loopback authority and its serving certificate, the bundle Codex trusts
//	firstrun.go                              the first run: find Codex's login, import it, test the relay
//	localkey.go                              the local API key clients send the relay
//	instance.go, relayclient.go, localapi.go the one relay per folder, how another process reaches it, what it serves there
//	service.go, serve.go, pause.go           the listener: start, move, pause, drain
//	credits.go, usage.go                     banked resets and the usage ledger (app/ledger) while serving
//	backup.go                                the encrypted export and import of accounts
//	errors.go, suggest.go, version.go        what a caller is told: field errors, suggestions, the build
//	boundedread.go                           reading a file of the user's: regular, bounded, never waited on
//
// app/cli is the command line over an App; app/ledger is the usage database; app/localapi is
// the local API (one route table for /relay/*, one client) the relay port and the tray serve.
package app
