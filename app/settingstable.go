package app

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
)

// A SettingName names a setting the same way everywhere: `codexrelay settings`, `settings set`
// and its help, and the settings window.
type SettingName string

// The settings, in the order the listings show them.
const (
	SettingListen             SettingName = "listen"
	SettingStrategy           SettingName = "strategy"
	SettingSWR                SettingName = "stale-while-revalidate"
	SettingStaleMaxAge        SettingName = "stale-max-age-ms"
	SettingTTL                SettingName = "ttl-ms"
	SettingHeaderTimeout      SettingName = "header-timeout-ms"
	SettingFirstEventTimeout  SettingName = "first-event-timeout-ms"
	SettingStreamIdleTimeout  SettingName = "stream-idle-timeout-ms"
	SettingHold               SettingName = "hold-seconds"
	SettingLocalAPIKey        SettingName = "local-api-key"
	SettingUsageLedger        SettingName = "usage-ledger"
	SettingUsageRetentionDays SettingName = "usage-retention-days"
)

// A Setting is one row of the settings table, from which the command line's `settings`,
// `settings set` and its help come, and the settings window its labels and hints. A new
// setting is one row here plus its effect in apply.
type Setting struct {
	Name  SettingName
	Label string // the settings window's label
	Help  string // the values it takes and what they do, for `settings set -h` and the window's hint
	// Parse checks a value given as text and returns what saves it. A value it refuses (not a
	// number, out of range, unknown) is a *FieldError naming the setting: the command line
	// reports it as a usage error. What the returned function refuses depends on the state
	// (a taken port): a runtime failure.
	Parse func(value string) (func(*App) error, error)
	// Show is the value in force, written as Parse reads it.
	Show func(a *App) string
}

// Settings is the settings table.
var SettingsTable = []Setting{
	{
		Name: SettingListen, Label: "Listen address",
		Help: "host:port on the loopback interface, e.g. " + DefaultListen + "; a port another program holds is refused",
		Parse: func(v string) (func(*App) error, error) {
			if err := checkListenSyntax(v); err != nil {
				return nil, err
			}
			return func(a *App) error { return a.SetListen(v) }, nil
		},
		Show: func(a *App) string { return a.ListenAddr() },
	},
	{
		Name: SettingStrategy, Label: "Routing",
		Help: "priority (accounts in list order), round-robin (they take turns) or most-quota-left (the most headroom first)",
		Parse: func(v string) (func(*App) error, error) {
			if err := validStrategy(v); err != nil || v == "" {
				return nil, settingError(SettingStrategy, "must be "+orList(proxy.Strategies), v, proxy.Strategies)
			}
			return func(a *App) error { return a.SetStrategy(v) }, nil
		},
		Show: func(a *App) string { return cmpOr(a.Settings().Strategy, proxy.StrategyPriority) },
	},
	{
		Name: SettingSWR, Label: "Stale-while-revalidate",
		Help:  "true or false: serve a stale model catalog while it refreshes",
		Parse: boolSetting(SettingSWR, (*App).SetStaleWhileRevalidate),
		Show:  func(a *App) string { return strconv.FormatBool(a.catalogStats().SWREnabled) },
	},
	{
		Name: SettingStaleMaxAge, Label: "Maximum stale age",
		Help: "how old a stale catalog may be, in milliseconds (at least the TTL)",
		Parse: msSetting(SettingStaleMaxAge, 1, func(a *App, d time.Duration) error {
			return a.SetCatalogTiming(d, 0)
		}),
		Show: func(a *App) string { return strconv.FormatInt(a.catalogStats().StaleMaxAgeMs, 10) },
	},
	{
		Name: SettingTTL, Label: "Catalog TTL",
		Help: "how long the catalog is fresh, in milliseconds",
		Parse: msSetting(SettingTTL, 1, func(a *App, d time.Duration) error {
			return a.SetCatalogTiming(0, d)
		}),
		Show: func(a *App) string { return strconv.FormatInt(a.catalogStats().TTLMs, 10) },
	},
	timeoutSetting(TimeoutHeader, "Headers within", "for the response headers"),
	timeoutSetting(TimeoutFirstEvent, "First event within", "for a stream's first event"),
	timeoutSetting(TimeoutStreamIdle, "Silence in a stream up to", "between a stream's events"),
	{
		Name: SettingHold, Label: "Hold requests up to",
		Help: fmt.Sprintf("how long a request waits, sending nothing, for a resting pool to come back: seconds from -1 (never) to %d (0: the default, %d)",
			maxHoldSeconds, int(proxy.DefaultHold.Seconds())),
		Parse: func(v string) (func(*App) error, error) {
			n, err := strconv.Atoi(v)
			if err != nil || n < -1 || n > maxHoldSeconds {
				return nil, settingError(SettingHold, fmt.Sprintf("must be a number of seconds from -1 (never) to %d (0 restores the default, %d)", maxHoldSeconds, int(proxy.DefaultHold.Seconds())), "", nil)
			}
			return func(a *App) error { return a.SetHold(n) }, nil
		},
		Show: func(a *App) string {
			switch d := a.Settings().Hold(); {
			case d < 0:
				return "-1"
			case d == 0:
				return strconv.Itoa(int(proxy.DefaultHold.Seconds()))
			default:
				return strconv.Itoa(int(d.Seconds()))
			}
		},
	},
	ResetCreditsSetting,
	{
		Name: SettingLocalAPIKey, Label: "Local API key",
		Help: "true or false: require clients to send the relay's own key (true keeps the key in force, or makes one: `codexrelay local-key show` prints it)",
		Parse: boolSetting(SettingLocalAPIKey, func(a *App, on bool) error {
			if on {
				_, _, err := a.EnsureLocalKey() // re-applying what `settings` printed changes nothing
				return err
			}
			_, err := a.SetLocalKey(false)
			return err
		}),
		Show: func(a *App) string { return strconv.FormatBool(a.Settings().LocalAPIKey) },
	},
	{
		Name: SettingUsageLedger, Label: "Usage ledger",
		Help:  "true or false: record each request's tokens in the usage ledger (see codexrelay usage)",
		Parse: boolSetting(SettingUsageLedger, (*App).SetUsageLedger),
		Show:  func(a *App) string { return strconv.FormatBool(!a.Settings().Usage.Off) },
	},
	{
		Name: SettingUsageRetentionDays, Label: "Usage retention",
		Help: fmt.Sprintf("days the usage ledger keeps each request (0: the default, %d); daily totals stay", defaultRetentionDays),
		Parse: func(v string) (func(*App) error, error) {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, settingError(SettingUsageRetentionDays, fmt.Sprintf("must be a number of days (0 restores the default, %d)", defaultRetentionDays), "", nil)
			}
			return func(a *App) error { return a.SetUsageRetention(n) }, nil
		},
		Show: func(a *App) string {
			return strconv.Itoa(cmp.Or(a.Settings().Usage.RetentionDays, defaultRetentionDays))
		},
	},
}

// defaultRetentionDays is the usage ledger's default retention in days.
var defaultRetentionDays = int(ledger.DefaultRetention / (24 * time.Hour))

// maxHoldSeconds is the longest hold: a client waits that long with nothing on the line.
const maxHoldSeconds = 3600

// LookupSetting returns the row of the setting called name.
func LookupSetting(name string) (Setting, bool) {
	for _, s := range SettingsTable {
		if string(s.Name) == name {
			return s, true
		}
	}
	return Setting{}, false
}

// SettingNames lists the names of the settings table, in its order.
func SettingNames() []string {
	names := make([]string, len(SettingsTable))
	for i, s := range SettingsTable {
		names[i] = string(s.Name)
	}
	return names
}

// settingError is a value a setting refuses, with a suggestion when v is close to one of the
// values it takes.
func settingError(name SettingName, msg, v string, values []string) *FieldError {
	if s := Suggest(v, values); s != "" && s != v {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	} else if v != "" && values != nil {
		msg += fmt.Sprintf(", not %q", v)
	}
	return &FieldError{Field: string(name), Msg: msg}
}

func boolSetting(name SettingName, set func(*App, bool) error) func(string) (func(*App) error, error) {
	return func(v string) (func(*App) error, error) {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, settingError(name, "takes true or false", v, []string{"true", "false"})
		}
		return func(a *App) error { return set(a, on) }, nil
	}
}

// msSetting parses a number of milliseconds of at least least.
func msSetting(name SettingName, least int64, set func(*App, time.Duration) error) func(string) (func(*App) error, error) {
	return func(v string) (func(*App) error, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < least {
			return nil, settingError(name, "must be a positive number of milliseconds", "", nil)
		}
		d := time.Duration(n) * time.Millisecond
		return func(a *App) error { return set(a, d) }, nil
	}
}

func timeoutSetting(which Timeout, label, what string) Setting {
	name := which.Setting()
	return Setting{
		Name: name, Label: label,
		Help: "upstream timeout " + what + ", in milliseconds: 0 restores the default, else at least 1000",
		Parse: func(v string) (func(*App) error, error) {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || (n > 0 && n < 1000) {
				return nil, settingError(name, "must be 0 (the default) or a number of milliseconds of at least 1000: a shorter timeout would cut healthy upstreams", "", nil)
			}
			return func(a *App) error { return a.SetTimeout(which, time.Duration(n)*time.Millisecond) }, nil
		},
		Show: func(a *App) string { return strconv.FormatInt(a.Settings().Timeouts.InForce(which).Milliseconds(), 10) },
	}
}

// orList writes "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// A Timeout names one of the upstream timeouts.
type Timeout string

// The upstream timeouts.
const (
	TimeoutHeader     Timeout = "header"      // for the response headers
	TimeoutFirstEvent Timeout = "first-event" // for a stream's first event
	TimeoutStreamIdle Timeout = "stream-idle" // between a stream's events
)

// Timeouts lists the upstream timeouts in the order the settings show them.
var Timeouts = []Timeout{TimeoutHeader, TimeoutFirstEvent, TimeoutStreamIdle}

// Setting is the name of the setting that sets the timeout.
func (t Timeout) Setting() SettingName { return SettingName(string(t) + "-timeout-ms") }

// InForce is the timeout which in force: the one set, else its default.
func (t TimeoutSettings) InForce(which Timeout) time.Duration {
	ms, def := t.field(which)
	if ms == nil || *ms == 0 {
		return def
	}
	return time.Duration(*ms) * time.Millisecond
}

// field is where t keeps the timeout which, in milliseconds, and its default; nil for a name
// that is no timeout.
func (t *TimeoutSettings) field(which Timeout) (*int64, time.Duration) {
	switch which {
	case TimeoutHeader:
		return &t.HeaderMs, proxy.DefaultHeaderTimeout
	case TimeoutFirstEvent:
		return &t.FirstEventMs, proxy.DefaultFirstEventTimeout
	case TimeoutStreamIdle:
		return &t.StreamIdleMs, proxy.DefaultStreamIdleTimeout
	}
	return nil, 0
}
