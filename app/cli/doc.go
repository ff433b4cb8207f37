// Package cli is the codexrelay command line: one command table (cli.go) from which the
// usage, the help of every command (-h prints its flags) and the dispatch come. Each command
// opens an app.App over the settings folder and acts through it; a command that needs the
// running relay (pause, resume, a redemption, live figures) asks it over the local API,
// signed with the folder's instance secret, and never by guessing a port. A usage error exits
// 2 with what was wrong and the command's usage; a failure exits 1 in proper English.
//
// By command: accounts.go (accounts and sign-ins), settings.go (settings and settings set,
// from app.SettingsTable), usage.go (the usage ledger), serve.go (the headless relay),
// pause.go, bench.go (the benchmarks of proxy/bench).
package cli
