package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"filippo.io/age"

	"github.com/codexrelay/codexrelay/proxy"
)

// An account export is one age file (filippo.io/age) encrypted to a passphrase with age's
// scrypt recipient. Its plaintext, which exists only in memory, is one JSON document:
//
//	{"format":"codexrelay-accounts","version":1,"exported_at":"...",
//	 "accounts":[{"position":1,"account":{AccountMeta without id and secret_rev},"secret":{Secret}}]}
//
// Import decrypts and checks the whole file before it writes anything, so a wrong passphrase,
// a damaged or truncated file, or one of an unknown version imports nothing.

// BackupVersion is the version of the export format this Codex Relay writes and reads.
const BackupVersion = 1

// backupFormat names the plaintext's kind, so that another age file is not taken for an export.
const backupFormat = "codexrelay-accounts"

// maxBackupBytes bounds an export file: a hundred sign-ins take well under 1 MiB.
const maxBackupBytes = 16 << 20

// scryptWorkFactor is the scrypt cost (log2) of an export: 2^18, about a second, age's default.
// CODEXRELAY_EXPORT_SCRYPT_LOG_N (10 to 22) changes it, for tests. Import accepts at most one
// step above it (importWorkFactor): a header claiming 2^22 costs 4 GB and seconds of scrypt
// before the passphrase is even known to be wrong.
var scryptWorkFactor = 18

func (a *App) exportWorkFactor() int {
	if n, err := strconv.Atoi(a.opt.Getenv("CODEXRELAY_EXPORT_SCRYPT_LOG_N")); err == nil && n >= 10 && n <= 22 {
		return n
	}
	return scryptWorkFactor
}

// importWorkFactor is the largest scrypt cost (log2) an import runs: one step above what
// exports are written with.
func (a *App) importWorkFactor() int { return min(a.exportWorkFactor()+1, 22) }

var (
	// ErrEmptyPassphrase refuses an export or import without a passphrase.
	ErrEmptyPassphrase = errors.New("the passphrase is empty: an account export is always encrypted with one")
	// ErrShortPassphrase refuses an export whose passphrase is shorter than
	// MinPassphraseLength: the file holds every key and sign-in, and may be copied anywhere.
	ErrShortPassphrase = fmt.Errorf("the passphrase is too short: an export holds every key and sign-in, so its passphrase needs at least %d characters", MinPassphraseLength)
	// ErrExportExists refuses to replace an existing file with an export unless asked to.
	ErrExportExists = errors.New("the file already exists")
	// ErrWrongPassphrase is an export that the passphrase does not open.
	ErrWrongPassphrase = errors.New("wrong passphrase")
	// ErrDamagedExport is a file that is not a whole, intact Codex Relay account export.
	ErrDamagedExport = errors.New("the account export is damaged, truncated or not an account export")
	// ErrExportVersion is an export of a format version this Codex Relay does not read.
	ErrExportVersion = errors.New("unknown account export version")
)

// SkippedAccount is an account an export or an import left out, and why.
type SkippedAccount struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// ExportResult says what ExportAccounts wrote.
type ExportResult struct {
	// Accounts are the accounts written, in priority order.
	Accounts []string `json:"accounts"`
	// ChatGPT are those of Accounts that are ChatGPT sign-ins. Their refresh tokens are
	// single-use: once the other machine refreshes one, the sign-in here stops working (and the
	// other way round), so the caller should offer to disable them here (DisableAccounts).
	ChatGPT []string `json:"chatgpt,omitempty"`
	// Skipped are accounts that were not written (no secret in the keychain).
	Skipped []SkippedAccount `json:"skipped,omitempty"`
}

// ImportResult says what ImportAccounts did.
type ImportResult struct {
	// Imported are the accounts added, in the order they were added (after the existing ones).
	Imported []string `json:"imported"`
	// ChatGPT are those of Imported that are ChatGPT sign-ins.
	ChatGPT []string `json:"chatgpt,omitempty"`
	// Skipped are the accounts of the file that exist here already (by name, by ChatGPT login,
	// or by API key), left as they are.
	Skipped []SkippedAccount `json:"skipped,omitempty"`
}

type backupFile struct {
	Format     string          `json:"format"`
	Version    int             `json:"version"`
	ExportedAt string          `json:"exported_at,omitempty"`
	Accounts   []backupAccount `json:"accounts"`
}

type backupAccount struct {
	Position int         `json:"position"` // 1-based, in the exporting machine's order
	Account  AccountMeta `json:"account"`  // without ID and SecretRev, which are this machine's
	Secret   Secret      `json:"secret"`
}

// ExportAccounts writes the accounts named (every account when none is named), with their
// settings, their position and their secrets read from the keychain, to w as one file
// encrypted with passphrase. Nothing is written to w in clear. An account whose keychain entry
// is missing is skipped and named; any other keychain failure fails the export.
func (a *App) ExportAccounts(w io.Writer, passphrase string, names ...string) (ExportResult, error) {
	if err := checkExportPassphrase(passphrase); err != nil {
		return ExportResult{}, err
	}
	plain, res, err := a.exportPlaintext(names)
	defer clear(plain)
	if err != nil {
		return res, err
	}
	rcpt, err := age.NewScryptRecipient(passphrase)
	if err != nil {
		return res, err
	}
	rcpt.SetWorkFactor(a.exportWorkFactor())
	enc, err := age.Encrypt(w, rcpt)
	if err != nil {
		return res, fmt.Errorf("cannot encrypt the export: %w", err)
	}
	if _, err := enc.Write(plain); err != nil {
		return res, fmt.Errorf("cannot write the export: %w", err)
	}
	if err := enc.Close(); err != nil {
		return res, fmt.Errorf("cannot write the export: %w", err)
	}
	return res, nil
}

// exportPlaintext reads the accounts and their secrets, under the settings lock (so that the
// list and the keychain agree) and the token lock (so that no refresh is half done), and
// returns the export's plaintext. The caller clears it.
func (a *App) exportPlaintext(names []string) ([]byte, ExportResult, error) {
	var res ExportResult
	unlock, err := lockFile(filepath.Join(a.opt.ConfigDir, settingsLockName), lockWait)
	if err != nil {
		return nil, res, err
	}
	defer unlock()
	s, err := readSettings(a.SettingsPath())
	if err != nil {
		return nil, res, err
	}
	for _, n := range names {
		if !slices.ContainsFunc(s.Accounts, func(m AccountMeta) bool { return m.Name == n }) {
			return nil, res, ErrNoAccount(n)
		}
	}
	unlockTokens, err := lockFile(filepath.Join(a.opt.ConfigDir, tokensLockName), lockWait)
	if err != nil {
		return nil, res, err
	}
	defer unlockTokens()
	f := backupFile{Format: backupFormat, Version: BackupVersion, ExportedAt: a.opt.Now().UTC().Format("2006-01-02T15:04:05Z")}
	for i, m := range s.Accounts {
		if len(names) > 0 && !slices.Contains(names, m.Name) {
			continue
		}
		v, err := a.opt.Keychain.Get(accountUser(m.ID))
		if errors.Is(err, ErrNoSecret) {
			res.Skipped = append(res.Skipped, SkippedAccount{m.Name, "the keychain has no secret for it"})
			continue
		}
		if err != nil {
			return nil, res, fmt.Errorf("cannot read the secret of %q: %w", m.Name, err)
		}
		sec, err := decodeSecret(v)
		if err != nil {
			res.Skipped = append(res.Skipped, SkippedAccount{m.Name, err.Error()})
			continue
		}
		m.ID, m.SecretRev = "", 0
		f.Accounts = append(f.Accounts, backupAccount{Position: i + 1, Account: m, Secret: sec})
		res.Accounts = append(res.Accounts, m.Name)
		if m.Kind == string(proxy.KindChatGPT) {
			res.ChatGPT = append(res.ChatGPT, m.Name)
		}
	}
	if len(f.Accounts) == 0 {
		if len(res.Skipped) > 0 {
			return nil, res, errors.New("nothing to export: no account has its secret in the keychain")
		}
		return nil, res, errors.New("nothing to export: there is no account")
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, res, errors.New("cannot encode the export")
	}
	return b, res, nil
}

// MinPassphraseLength is the shortest passphrase an export takes (an import takes whatever its
// export was made with).
const MinPassphraseLength = 8

// checkExportPassphrase refuses an empty or short passphrase for an export.
func checkExportPassphrase(p string) error {
	switch {
	case p == "":
		return ErrEmptyPassphrase
	case utf8.RuneCountInString(p) < MinPassphraseLength:
		return ErrShortPassphrase
	}
	return nil
}

// CheckExportTarget says whether an export may be written to path, before anything is asked
// or read: its folder exists, and path is not a link, a folder or another non-regular file,
// nor (unless replace is set) an existing file (ErrExportExists).
func CheckExportTarget(path string, replace bool) error {
	dir := filepath.Dir(path)
	switch st, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot write the export to %s: the folder %s does not exist", path, dir)
	case err != nil:
		return fmt.Errorf("cannot write the export to %s: %w", path, cause(err))
	case !st.IsDir():
		return fmt.Errorf("cannot write the export to %s: %s is not a folder", path, dir)
	}
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("cannot write the export to %s: %w", path, cause(err))
	case st.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: Codex Relay does not write an export through a link; choose the file itself or another name", path)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file but %s: choose another name", path, fileKind(st.Mode()))
	case !replace:
		return fmt.Errorf("%w: %s is not replaced unless you ask (or choose another name)", ErrExportExists, path)
	}
	return nil
}

// cause is the system's reason inside a file operation's error, without the file names it
// carries (an export's temporary file is no name the user chose).
func cause(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

// ExportAccountsFile writes the export (see ExportAccounts) to path, mode 0600, through a
// temporary file in the same folder renamed over path at the end: a failed export leaves no
// partial file. An existing file is replaced only when replace is set (CheckExportTarget).
func (a *App) ExportAccountsFile(path, passphrase string, replace bool, names ...string) (ExportResult, error) {
	if err := checkExportPassphrase(passphrase); err != nil {
		return ExportResult{}, err
	}
	if err := CheckExportTarget(path, replace); err != nil {
		return ExportResult{}, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*.tmp")
	if err != nil {
		return ExportResult{}, fmt.Errorf("cannot write the export to %s: %w", path, cause(err))
	}
	defer os.Remove(f.Name()) // a no-op after the rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return ExportResult{}, fmt.Errorf("cannot write the export to %s: %w", path, cause(err))
	}
	res, err := a.ExportAccounts(f, passphrase, names...)
	if err != nil {
		f.Close()
		return res, err
	}
	err = f.Sync()
	if err2 := f.Close(); err == nil {
		err = err2
	}
	if err != nil {
		return res, fmt.Errorf("cannot write the export to %s: %w", path, cause(err))
	}
	if err := CheckExportTarget(path, replace); err != nil { // a link (or a file) put there meanwhile
		return res, err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return res, fmt.Errorf("cannot write the export to %s: %w", path, cause(err))
	}
	return res, nil
}

// ImportAccountsFile is ImportAccounts from the file at path.
func (a *App) ImportAccountsFile(path, passphrase string) (ImportResult, error) {
	if passphrase == "" {
		return ImportResult{}, ErrEmptyPassphrase
	}
	f, err := os.Open(path)
	if err != nil {
		return ImportResult{}, fmt.Errorf("cannot read the export: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return ImportResult{}, fmt.Errorf("%s is not a regular file but %s", path, fileKind(st.Mode()))
	}
	return a.ImportAccounts(f, passphrase)
}

// ImportAccounts reads an export written by ExportAccounts and adds its accounts, with their
// settings and secrets, after the existing ones in the order of the file. An account that
// exists here already (the same name, the same ChatGPT login, or the same API key and base
// URL) is skipped and named. The whole file is decrypted and checked before anything is
// written: a wrong passphrase (ErrWrongPassphrase), a damaged or truncated file
// (ErrDamagedExport) or an unknown version (ErrExportVersion) imports nothing. The secrets go
// to the keychain and the accounts to the settings in one change under the settings lock; if
// any keychain write fails, the entries already written are removed and nothing is imported.
func (a *App) ImportAccounts(r io.Reader, passphrase string) (ImportResult, error) {
	if passphrase == "" {
		return ImportResult{}, ErrEmptyPassphrase
	}
	f, err := readExport(r, passphrase, a.importWorkFactor())
	if err != nil {
		return ImportResult{}, err
	}
	var res ImportResult
	var stored []string // keychain users written, removed again if the change fails
	err = a.update(func(s *Settings) error {
		res = ImportResult{}
		held := a.heldSecrets(s.Accounts)
		for _, e := range f.Accounts {
			m := e.Account
			if slices.ContainsFunc(s.Accounts, func(o AccountMeta) bool { return o.Name == m.Name }) {
				res.Skipped = append(res.Skipped, SkippedAccount{m.Name, "an account of that name exists here"})
				continue
			}
			if other := sameLogin(held, m, e.Secret); other != "" {
				what := "the same API key"
				if m.Kind == string(proxy.KindChatGPT) {
					what = "the same ChatGPT login"
				}
				res.Skipped = append(res.Skipped, SkippedAccount{m.Name, fmt.Sprintf("%s is here as %q", what, other)})
				continue
			}
			m.ID, m.SecretRev = newID(), 0
			if m.Added.IsZero() {
				m.Added = a.opt.Now().UTC()
			}
			if err := a.opt.Keychain.Set(accountUser(m.ID), e.Secret.encode()); err != nil {
				return fmt.Errorf("cannot store the secret of %q in the keychain, so nothing was imported: %w", m.Name, err)
			}
			stored = append(stored, accountUser(m.ID))
			s.Accounts = append(s.Accounts, m)
			held = append(held, heldSecret{m, e.Secret})
			res.Imported = append(res.Imported, m.Name)
			if m.Kind == string(proxy.KindChatGPT) {
				res.ChatGPT = append(res.ChatGPT, m.Name)
			}
		}
		return nil
	})
	if err != nil {
		for _, u := range stored {
			a.opt.Keychain.Delete(u)
		}
		return ImportResult{}, err
	}
	return res, nil
}

// readExport decrypts and checks a whole export. Its errors say what is wrong with the file
// and that nothing was imported; they never carry its content.
func readExport(r io.Reader, passphrase string, maxWorkFactor int) (backupFile, error) {
	var f backupFile
	ct, err := io.ReadAll(io.LimitReader(r, maxBackupBytes+1))
	if err != nil {
		return f, fmt.Errorf("cannot read the export: %w", err)
	}
	if len(ct) > maxBackupBytes {
		return f, fmt.Errorf("%w (it is larger than %d MiB): nothing was imported", ErrDamagedExport, maxBackupBytes>>20)
	}
	id, err := age.NewScryptIdentity(passphrase)
	if err != nil {
		return f, err
	}
	id.SetMaxWorkFactor(maxWorkFactor)
	pr, err := age.Decrypt(bytes.NewReader(ct), id)
	var nomatch *age.NoIdentityMatchError
	switch {
	case err != nil && strings.Contains(err.Error(), "scrypt work factor too large"):
		return f, fmt.Errorf("%w (its passphrase costs more than the 2^%d this Codex Relay accepts; it writes 2^%d): nothing was imported",
			ErrDamagedExport, maxWorkFactor, maxWorkFactor-1)
	case errors.As(err, &nomatch):
		return f, fmt.Errorf("%w (or the file is not an export encrypted with a passphrase, or its header is damaged): nothing was imported", ErrWrongPassphrase)
	case err != nil:
		return f, fmt.Errorf("%w (%v): nothing was imported", ErrDamagedExport, err)
	}
	plain, err := io.ReadAll(io.LimitReader(pr, maxBackupBytes+1))
	defer clear(plain)
	if err != nil {
		return f, fmt.Errorf("%w (%v): nothing was imported", ErrDamagedExport, err)
	}
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if json.Unmarshal(plain, &head) != nil || head.Format != backupFormat {
		return f, fmt.Errorf("%w (it decrypts, but is not a Codex Relay account export): nothing was imported", ErrDamagedExport)
	}
	if head.Version != BackupVersion {
		return f, fmt.Errorf("%w %d (this Codex Relay reads version %d; a newer one wrote it?): nothing was imported", ErrExportVersion, head.Version, BackupVersion)
	}
	if json.Unmarshal(plain, &f) != nil {
		return backupFile{}, fmt.Errorf("%w (its accounts cannot be read): nothing was imported", ErrDamagedExport)
	}
	if err := checkExport(f); err != nil {
		return backupFile{}, fmt.Errorf("%w (%v): nothing was imported", ErrDamagedExport, err)
	}
	slices.SortStableFunc(f.Accounts, func(x, y backupAccount) int { return x.Position - y.Position })
	return f, nil
}

// checkExport checks every account of an export as AddAccount would. Its errors name the
// account and the field, never a secret.
func checkExport(f backupFile) error {
	if len(f.Accounts) == 0 {
		return errors.New("it holds no account")
	}
	seen := map[string]bool{}
	for i := range f.Accounts {
		e := &f.Accounts[i]
		m := &e.Account
		if err := ValidateName(m.Name); err != nil {
			return fmt.Errorf("account %d: %v", i+1, err)
		}
		if seen[m.Name] {
			return fmt.Errorf("account %q appears twice", m.Name)
		}
		seen[m.Name] = true
		// The account as AddAccount takes it (kind, base URL, API), told by its field only: the
		// file's values are not repeated.
		checked, err := CheckNewAccount(NewAccount{Name: m.Name, Kind: m.Kind, BaseURL: m.BaseURL, API: m.API})
		if err != nil {
			what := "description"
			var fe *FieldError
			if errors.As(err, &fe) {
				what = fe.Field
			}
			return fmt.Errorf("account %q: its %s is not valid", m.Name, what)
		}
		m.BaseURL, m.API = checked.BaseURL, checked.API
		if CheckReserve(m.Reserve) != nil {
			return fmt.Errorf("account %q: its reserve is not valid", m.Name)
		}
		// What the settings keep is bounded and clean (fields.go): a field past the settings
		// file's limit would make every later change of the folder fail.
		m.Email = cleanEmail(m.Email)
		if err := checkSecretSize(e.Secret); err != nil {
			return fmt.Errorf("account %q: %v", m.Name, err)
		}
		switch proxy.Kind(m.Kind) {
		case proxy.KindOpenAI:
			if ValidateKey(e.Secret.APIKey) != nil {
				return fmt.Errorf("account %q: its API key is missing or not valid", m.Name)
			}
		case proxy.KindChatGPT:
			if e.Secret.AccessToken == "" && e.Secret.RefreshToken == "" {
				return fmt.Errorf("account %q: its ChatGPT sign-in has no token", m.Name)
			}
		}
	}
	return nil
}

type heldSecret struct {
	meta AccountMeta
	sec  Secret
}

// heldSecrets reads the secrets of the existing accounts from the keychain, for sameLogin.
// An entry that cannot be read is left out (the account is still skipped by its name).
func (a *App) heldSecrets(accounts []AccountMeta) []heldSecret {
	var out []heldSecret
	for _, m := range accounts {
		v, err := a.opt.Keychain.Get(accountUser(m.ID))
		if err != nil {
			continue
		}
		if sec, err := decodeSecret(v); err == nil {
			out = append(out, heldSecret{m, sec})
		}
	}
	return out
}

// sameLogin names the existing account that holds the same login as m: the same ChatGPT
// user in the same workspace, or the same access token, or the same API key at the same base
// URL; "" when none does.
func sameLogin(held []heldSecret, m AccountMeta, sec Secret) string {
	for _, h := range held {
		if h.meta.Kind != m.Kind {
			continue
		}
		switch proxy.Kind(m.Kind) {
		case proxy.KindChatGPT:
			if sameChatGPTLogin(h.sec, h.meta.Email, sec, m.Email) ||
				(sec.AccessToken != "" && h.sec.AccessToken == sec.AccessToken) {
				return h.meta.Name
			}
		case proxy.KindOpenAI:
			if sec.APIKey != "" && h.sec.APIKey == sec.APIKey && h.meta.BaseURL == m.BaseURL {
				return h.meta.Name
			}
		}
	}
	return ""
}

// DisableAccounts disables the accounts named, in one change: after an export, the ChatGPT
// sign-ins that the other machine will use (their refresh tokens are single-use). A name that
// does not exist fails the change and nothing is disabled.
func (a *App) DisableAccounts(names []string) error {
	return a.update(func(s *Settings) error {
		for _, n := range names {
			i := slices.IndexFunc(s.Accounts, func(m AccountMeta) bool { return m.Name == n })
			if i < 0 {
				return ErrNoAccount(n)
			}
			s.Accounts[i].Disabled = true
		}
		return nil
	})
}
