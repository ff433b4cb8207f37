package localapi

// The answers of the routes that are the local API's own; the others are proxy.Snapshot,
// []proxy.Trace, proxy.RedeemResult and the ledger's reports.

// PauseState is the pause routes' answer.
type PauseState struct {
	Paused bool `json:"paused"`
	// Changed is false when the relay already was as asked.
	Changed bool `json:"changed"`
}

// Status is the tray's listener (app.ServiceStatus, its error as text).
type Status struct {
	Addr    string `json:"addr"` // where it listens, or would
	Running bool   `json:"running"`
	Paused  bool   `json:"paused"`
	Error   string `json:"error,omitempty"`   // why it is not running, when it should be
	Warning string `json:"warning,omitempty"` // why it does not listen where the settings say
	// Refusing says why the relay refuses every client while it listens.
	Refusing string `json:"refusing,omitempty"`
}

// Health is the relay port's GET /health, which the proxy answers itself before any key is
// asked for (it is not a route of the table): what a program waiting for the relay reads.
type Health struct {
	Status        string `json:"status"`
	Accounts      int    `json:"accounts"`
	ReadyAccounts int    `json:"ready_accounts"`
	UptimeMs      int64  `json:"uptime_ms"`
	Listen        string `json:"listen"`
	// SettingsGeneration is the generation of the settings file the relay applied last.
	SettingsGeneration uint64 `json:"settings_generation"`
	Paused             bool   `json:"paused"`
}

// Changes is GET /relay/changes's answer: the generation of the relay's state (stats, traces,
// listener) when it answered.
type Changes struct {
	Generation uint64 `json:"generation"`
}
