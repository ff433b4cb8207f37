// Package app is Codex Relay's store: a settings folder's settings, its accounts and their
// secrets, the Codex CLI's files it configures, and the running relay's contract (where it may
// listen, its status). The tray process, the window process and the command line each open one
// store over one settings folder (Open), and act through its methods; a program that serves
// also runs the relay over it (app/relay), which follows what the store applies.
//
// Its two sources of truth are the settings file (settings.go: read under a cross-process lock
// and re-read before each change, so that no process writes a whole in-memory copy over it)
// and the operating system's keychain (keychain*.go, credentials.go: the accounts' secrets and
// the local API key, never written anywhere else). watch.go notices the file change, App.Reload
// applies it, and App.Follow hands each change to the relay, which the store knows no more of.
//
// By job (doc_test.go holds this index to the folder):
//
//	settings.go, settingstable.go, aliases.go  the file, its table of settings (a setting is its row, App.Set its one setter), the aliases
//	app.go, config.go, memory.go             Open, Reload and Follow: the store, the catalog's options, the memory limit
//	watch.go                                 following the settings file and its folder
//	accounts.go, fields.go, credentials.go   the account store and each account's credential
//	keychain*.go                             the operating system's keychain, and listing its entries
//	oauth.go, browser.go                     signing in with ChatGPT (browser and device code)
//	codex.go, codexfiles.go                  the Codex CLI's login and its config.toml
//	codexenv.go, codexundo.go                Codex's .env (SSL_CERT_FILE, NO_PROXY), and undoing what a write did (--remove)
//	loopca.go, codexbundle.go                the loopback authority and its serving certificate, the bundle Codex trusts
//	firstrun.go                              the first run: find Codex's login, import it, test the relay
//	localkey.go                              the local API key clients send the relay
//	instance.go, relayclient.go, pause.go    the one relay per folder, and how another process reaches it
//	serve.go                                 the listener: where the relay may listen, its port, its status
//	credits.go, quotaextras.go               banked resets (the policy, kept intents), an account's extra quotas
//	usage.go                                 the usage ledger's settings and database
//	backup.go                                the encrypted export and import of accounts
//	autostart*.go, updatecheck.go            starting at login, and the update check
//	errors.go, suggest.go, version.go        what a caller is told: field errors, suggestions, the build
//	boundedread.go                           reading a file of the user's: regular, bounded, never waited on
//	doc.go                                   this index
//
// Below it: app/relay is the running relay over a store (its proxy, listener service, usage
// ledger and banked resets); app/cli is the command line over a store and its relay;
// app/ledger is the usage database; app/localapi is the local API (one route table for
// /relay/*, one client) the relay port and the tray serve; app/looptls serves TLS on the
// relay's port; app/update reads the release feed.
package app
