package app

import (
	"errors"
)

// Placeholders of the accounts issue (ChatGPT sign-in, Codex import and config, start at
// login). Their signatures are what the tray and the CLI use.

var errNotYet = errors.New("not available in this version yet")

// ImportCodex imports the Codex CLI login from auth.json at path ("" = ~/.codex/auth.json).
func (a *App) ImportCodex(path string) (AccountMeta, error) { return AccountMeta{}, errNotYet }

// CodexConfig is the provider block for ~/.codex/config.toml.
func (a *App) CodexConfig() string { return "" }

// WriteCodexConfig merges the provider block into the Codex config at path ("" = ~/.codex/config.toml),
// writing a backup first; it returns the backup's path.
func (a *App) WriteCodexConfig(path string) (backup string, err error) { return "", errNotYet }

// SetStartAtLogin installs or removes the login item that starts the tray app.
func (a *App) SetStartAtLogin(on bool) error { return errNotYet }
