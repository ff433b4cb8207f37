package app

import (
	"github.com/codexrelay/codexrelay/app/update"

	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/proxy"
)

// A setting is its row of SettingsTable. The row owns the setting's name, the values it takes
// (its check), how it is saved (set) and written (Show), and how the settings window edits it
// (its section, kind, choices and unit); `codexrelay settings`, `settings set` and its help,
// App.Set (the one setter) and the settings window all go through it. A new setting is its
// field in Settings, its row here, and, when a running relay must follow it, its effect in the
// relay's follow (app/relay/follow.go).

// A SettingName names a setting the same way everywhere: `codexrelay settings`, `settings set`
// and its help, the settings window, and the Field of a FieldError about its value.
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
	SettingResetCredits       SettingName = "reset-credits"
	SettingLowCapacity        SettingName = "low-capacity-percent"
	SettingLocalAPIKey        SettingName = "local-api-key"
	SettingStartAtLogin       SettingName = "start-at-login"
	SettingUsageLedger        SettingName = "usage-ledger"
	SettingUsageRetentionDays SettingName = "usage-retention-days"
	SettingUpdateCheck        SettingName = "update-check"
	SettingUpdateFeed         SettingName = "update-feed"
)

// NotifySetting is the name of the setting that turns notifications of kind on or off
// ("notify-needs-login" for NotifyNeedsLogin).
func NotifySetting(kind string) SettingName {
	return SettingName("notify-" + strings.ReplaceAll(kind, "_", "-"))
}

// A SettingKind is how a setting's value is edited.
type SettingKind int

// The kinds of settings.
const (
	SettingText   SettingKind = iota // free text, checked by the row (an address)
	SettingBool                      // true or false: a check box
	SettingChoice                    // one of Choices: a drop-down
	SettingNumber                    // a whole number, shown in Unit
)

// A Setting is one row of the settings table.
type Setting struct {
	Name    SettingName
	Label   string // the settings window's label
	Help    string // the values it takes and what they do, for `settings set -h` and the window's hint
	Section string // the settings window's section, in the order SettingSections lists them
	Kind    SettingKind
	Choices []string // a choice's values, in the order offered
	// Unit is the unit the settings window shows a number in, and Scale how many of the
	// setting's own units make one of it (1000 for a setting in milliseconds shown in
	// seconds; 0 is 1).
	Unit  string
	Scale int64
	// check refuses a value written as text that the setting does not take (not a number, out
	// of range, unknown) with a *FieldError naming the setting: the command line reports it as
	// a usage error. It runs on a value given to `settings set`, the window or a typed setter,
	// and (for the settings apply checks) on the file's value.
	check func(v string) error
	// set saves a value check passed. What it refuses depends on the state (a taken port): a
	// runtime failure.
	set func(a *App, v string) error
	// Show is the value in force, written as check reads it.
	Show func(a *App) string
}

// Parse checks a value given as text and returns what saves it.
func (st Setting) Parse(v string) (func(*App) error, error) {
	if err := st.check(v); err != nil {
		return nil, err
	}
	return func(a *App) error { return st.set(a, v) }, nil
}

// Check reports whether the setting takes v, as Parse does, without saving anything.
func (st Setting) Check(v string) error { return st.check(v) }

// The settings window's sections, in its order.
const (
	SectionProxy    = "Proxy"
	SectionCatalog  = "Model catalog"
	SectionTimeouts = "Upstream timeouts"
	SectionResting  = "When every account rests"
	SectionNotify   = "Notifications"
	SectionSecurity = "Security"
	SectionUsage    = "Usage"
	SectionSystem   = "System"
)

// SettingSections lists the sections in the settings window's order.
var SettingSections = []string{SectionProxy, SectionCatalog, SectionTimeouts, SectionResting, SectionNotify, SectionSecurity, SectionUsage, SectionSystem}

// SettingsTable is the settings table (made by init: its rows' effects reach apply, which
// checks the file's values against the table).
var SettingsTable []Setting

func settingsTable() []Setting {
	return slices.Concat(relaySettings(), notifySettings(), desktopSettings())
}

// relaySettings are the rows of what the relay does: where it listens, how it routes, its
// catalog, its timeouts and what it does when every account rests.
func relaySettings() []Setting {
	return []Setting{
		{
			Name: SettingListen, Label: "Listen address", Section: SectionProxy, Kind: SettingText,
			Help:  "host:port on the loopback interface, e.g. " + DefaultListen + "; a port another program holds is refused",
			check: checkListenSyntax,
			set:   (*App).listenOn,
			Show:  func(a *App) string { return a.ListenAddr() },
		},
		{
			Name: SettingStrategy, Label: "Routing", Section: SectionProxy, Kind: SettingChoice, Choices: proxy.Strategies,
			Help: "priority (accounts in list order), round-robin (they take turns), most-quota-left (the most headroom first) or reset-first (the quota that resets soonest first)",
			set: func(a *App, v string) error {
				return a.update(func(s *Settings) error { s.Strategy = v; return nil })
			},
			Show: func(a *App) string { return cmpOr(a.Settings().Strategy, proxy.StrategyPriority) },
		},
		boolSetting(Setting{
			Name: SettingSWR, Label: "Serve the cached catalog while it refreshes (stale-while-revalidate)", Section: SectionCatalog,
			Help: "true or false: serve a stale model catalog while it refreshes",
			Show: func(a *App) string { return strconv.FormatBool(a.catalogStats().SWREnabled) },
		}, func(a *App, on bool) error {
			return a.update(func(s *Settings) error { s.Catalog.StaleWhileRevalidate = &on; return nil })
		}),
		numberSetting(Setting{
			Name: SettingStaleMaxAge, Label: "Maximum stale age", Section: SectionCatalog, Unit: "min", Scale: 60000,
			Help: "how old a stale catalog may be, in milliseconds (at least the TTL)",
			Show: func(a *App) string { return strconv.FormatInt(a.catalogStats().StaleMaxAgeMs, 10) },
		}, 1, -1, "must be a positive number of milliseconds", func(a *App, n int64) error {
			return a.setCatalogTiming(time.Duration(n)*time.Millisecond, 0)
		}),
		numberSetting(Setting{
			Name: SettingTTL, Label: "Catalog TTL", Section: SectionCatalog, Unit: "min", Scale: 60000,
			Help: "how long the catalog is fresh, in milliseconds",
			Show: func(a *App) string { return strconv.FormatInt(a.catalogStats().TTLMs, 10) },
		}, 1, -1, "must be a positive number of milliseconds", func(a *App, n int64) error {
			return a.setCatalogTiming(0, time.Duration(n)*time.Millisecond)
		}),
		timeoutSetting(TimeoutHeader, "Headers within", "for the response headers"),
		timeoutSetting(TimeoutFirstEvent, "First event within", "for a stream's first event"),
		timeoutSetting(TimeoutStreamIdle, "Silence in a stream up to", "between a stream's events"),
		numberSetting(Setting{
			Name: SettingHold, Label: "Hold requests up to", Section: SectionResting, Unit: "s",
			Help: fmt.Sprintf("how long a request waits, sending nothing, for a resting pool to come back: seconds from -1 (never) to %d (0: the default, %d)",
				maxHoldSeconds, int(proxy.DefaultHold.Seconds())),
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
		}, -1, maxHoldSeconds, fmt.Sprintf("must be a number of seconds from -1 (never) to %d (0 restores the default, %d)", maxHoldSeconds, int(proxy.DefaultHold.Seconds())),
			func(a *App, n int64) error {
				return a.update(func(s *Settings) error { s.HoldSeconds = int(n); return nil })
			}),
		{
			Name: SettingResetCredits, Label: "Banked resets", Section: SectionResting, Kind: SettingChoice, Choices: proxy.ResetCreditModes,
			Help: "ask (a notification offers to redeem one when every account rests), auto (the relay redeems one then, " +
				"the banked reset that expires first) or off (banked resets are neither read nor spent)",
			set: func(a *App, mode string) error {
				return a.update(func(s *Settings) error {
					s.ResetCredits = mode
					if mode == proxy.ResetCreditsAsk {
						s.ResetCredits = "" // the default is not written
					}
					return nil
				})
			},
			Show: func(a *App) string { return a.ResetCredits() },
		},
	}
}

// listenOn is the listen row's effect: it saves a new listen address, which a running relay
// moves to. An address whose port another program holds is refused and nothing is saved, so
// that the next start does not fail (the port the relay of this folder listens on now is its
// own, and taken by it).
func (a *App) listenOn(addr string) error {
	if err := a.CheckListen(addr, false); err != nil {
		return err
	}
	if info := RunningInstance(a.ConfigDir()); info == nil || info.Listen != addr {
		ln, err := a.Listen(addr)
		if err != nil {
			return err
		}
		ln.Close()
	}
	return a.SaveListen(addr)
}

// SaveListen writes the listen setting as it is, checking neither the address nor its port:
// for the relay's Service (app/relay), which checked both and may hold the port itself.
// Everyone else saves it through its row (Set), which checks.
func (a *App) SaveListen(addr string) error {
	return a.update(func(s *Settings) error { s.Listen = addr; return nil })
}

// setCatalogTiming saves the stale maximum age and the TTL (zero keeps the current value),
// refusing a pair where a stale catalog would never be served.
func (a *App) setCatalogTiming(staleMaxAge, ttl time.Duration) error {
	return a.update(func(s *Settings) error {
		if staleMaxAge > 0 {
			s.Catalog.StaleMaxAgeMs = staleMaxAge.Milliseconds()
		}
		if ttl > 0 {
			s.Catalog.TTLMs = ttl.Milliseconds()
		}
		// A stale catalog is one older than the TTL: a maximum stale age below it would
		// never serve one.
		opt, _ := catalogOptions(*s, func(string) string { return "" })
		if opt.StaleMaxAge < opt.TTL {
			return fieldError(string(SettingStaleMaxAge), fmt.Sprintf("(%s) is shorter than the catalog TTL (%s): it must be at least as long", opt.StaleMaxAge, opt.TTL))
		}
		return nil
	})
}

// desktopSettings are the rows of the low-capacity warning, the local key, the usage ledger
// and the login item.
func desktopSettings() []Setting {
	return []Setting{
		numberSetting(Setting{
			Name: SettingLowCapacity, Label: "Warn when the five-hour capacity left falls below", Section: SectionNotify, Unit: "%",
			Help: fmt.Sprintf("the share of the pool's five-hour capacity, in percent from 1 to 99, under which the tray app warns (default %d)", DefaultLowCapacityPercent),
			Show: func(a *App) string { return strconv.Itoa(a.Settings().Notifications.Threshold()) },
		}, 1, 99, "must be a percentage from 1 to 99", func(a *App, n int64) error {
			return a.update(func(s *Settings) error { s.Notifications.LowCapacityPercent = int(n); return nil })
		}),
		boolSetting(Setting{
			Name: SettingLocalAPIKey, Label: "Require a local API key from clients", Section: SectionSecurity,
			Help: "true or false: require clients to send the relay's own key (true keeps the key in force, or makes one: `codexrelay local-key show` prints it)",
			Show: func(a *App) string { return strconv.FormatBool(a.Settings().LocalAPIKey) },
		}, func(a *App, on bool) error {
			if on {
				_, _, err := a.EnsureLocalKey() // re-applying what `settings` printed changes nothing
				return err
			}
			_, err := a.SetLocalKey(false)
			return err
		}),
		boolSetting(Setting{
			Name: SettingUsageLedger, Label: "Record each request's tokens in the usage ledger", Section: SectionUsage,
			Help: "true or false: record each request's tokens in the usage ledger (see codexrelay usage)",
			Show: func(a *App) string { return strconv.FormatBool(!a.Settings().Usage.Off) },
		}, func(a *App, on bool) error {
			return a.update(func(s *Settings) error { s.Usage.Off = !on; return nil })
		}),
		numberSetting(Setting{
			Name: SettingUsageRetentionDays, Label: "Keep each request for", Section: SectionUsage, Unit: "days",
			Help: fmt.Sprintf("days the usage ledger keeps each request (0: the default, %d); daily totals stay", defaultRetentionDays),
			Show: func(a *App) string {
				return strconv.Itoa(cmp.Or(a.Settings().Usage.RetentionDays, defaultRetentionDays))
			},
		}, 0, -1, fmt.Sprintf("must be a number of days (0 restores the default, %d)", defaultRetentionDays), func(a *App, n int64) error {
			return a.update(func(s *Settings) error { s.Usage.RetentionDays = int(n); return nil })
		}),
		boolSetting(Setting{
			Name: SettingStartAtLogin, Label: "Start Codex Relay when I log in", Section: SectionSystem,
			Help: "true or false: start the tray app when you log in (an XDG autostart entry on Linux, a launch agent on macOS, the Run key on Windows)",
			Show: func(a *App) string { return strconv.FormatBool(a.Settings().StartAtLogin) },
		}, (*App).startAtLogin),
		boolSetting(Setting{
			Name: SettingUpdateCheck, Label: "Tell me when a newer release exists", Section: SectionSystem,
			Help: "true or false: ask the update feed for the latest release at start and daily (off by default: no network call)",
			Show: func(a *App) string { return strconv.FormatBool(a.Settings().Updates.Check) },
		}, func(a *App, on bool) error {
			return a.update(func(s *Settings) error { s.Updates.Check = on; return nil })
		}),
		{
			Name: SettingUpdateFeed, Label: "Release feed", Section: SectionSystem, Kind: SettingText,
			Help: "the URL of the latest-release feed the update check reads (empty: " + update.DefaultFeed + ")",
			check: func(v string) error {
				if v == "" {
					return nil
				}
				if err := update.CheckFeedURL(v); err != nil {
					return settingError(SettingUpdateFeed, err.Error(), v, nil)
				}
				return nil
			},
			set: func(a *App, v string) error {
				return a.update(func(s *Settings) error { s.Updates.Feed = v; return nil })
			},
			Show: func(a *App) string { return cmpOr(a.Settings().Updates.Feed, update.DefaultFeed) },
		},
	}
}

// notifyLabels say what each kind of notification is about.
var notifyLabels = map[string]string{
	NotifyNeedsLogin:  "An account needs a new sign-in, or its key is rejected",
	NotifyLimit:       "An account reaches its usage limit (with the time it resets)",
	NotifyAllResting:  "Every account is resting (with the first one back)",
	NotifyWindowReset: "An account's five-hour or weekly window resets",
	NotifyLowCapacity: "The five-hour capacity left falls below the low-capacity threshold",
	NotifyResetCredit: "A banked reset expires within a day, may be redeemed, or was",
}

// notifySettings are the rows that turn each kind of notification on or off.
func notifySettings() []Setting {
	rows := make([]Setting, len(NotifyKinds))
	for i, kind := range NotifyKinds {
		rows[i] = boolSetting(Setting{
			Name: NotifySetting(kind), Label: notifyLabels[kind], Section: SectionNotify,
			Help: "true or false: notify when " + strings.ToLower(notifyLabels[kind][:1]) + notifyLabels[kind][1:],
			Show: func(a *App) string { return strconv.FormatBool(a.Settings().Notifications.Enabled(kind)) },
		}, func(a *App, on bool) error {
			return a.update(func(s *Settings) error {
				off := slices.DeleteFunc(slices.Clone(s.Notifications.Off), func(k string) bool { return k == kind })
				if !on {
					off = append(off, kind)
				}
				s.Notifications.Off = off
				return nil
			})
		})
	}
	return rows
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

// Set saves the setting called name, given as text, as `codexrelay settings set` does: a value
// its row refuses is a *FieldError naming it.
func (a *App) Set(name SettingName, value string) error {
	st, ok := LookupSetting(string(name))
	if !ok {
		return fieldError(string(name), fmt.Sprintf("is no setting: the settings are %s", strings.Join(SettingNames(), ", ")))
	}
	set, err := st.Parse(value)
	if err != nil {
		return err
	}
	return set(a)
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

// The row builders fill in a row's check and set from its kind. A row written out whole
// (check nil, Kind SettingChoice) takes one of its Choices.
func init() {
	SettingsTable = settingsTable()
	for i := range SettingsTable {
		st := &SettingsTable[i]
		if st.check == nil && st.Kind == SettingChoice {
			st.check = choiceCheck(st.Name, st.Choices)
		}
	}
}

func choiceCheck(name SettingName, choices []string) func(string) error {
	return func(v string) error {
		if !slices.Contains(choices, v) {
			return settingError(name, "must be "+orList(choices), v, choices)
		}
		return nil
	}
}

// boolSetting makes st a setting that takes true or false, saved by set.
func boolSetting(st Setting, set func(*App, bool) error) Setting {
	st.Kind = SettingBool
	st.check = func(v string) error {
		if _, err := strconv.ParseBool(v); err != nil {
			return settingError(st.Name, "takes true or false", v, []string{"true", "false"})
		}
		return nil
	}
	st.set = func(a *App, v string) error {
		on, _ := strconv.ParseBool(v)
		return set(a, on)
	}
	return st
}

// numberSetting makes st a setting that takes a whole number from least to most (most < least:
// no upper bound), saved by set; msg says what it takes when refused.
func numberSetting(st Setting, least, most int64, msg string, set func(*App, int64) error) Setting {
	st.Kind = SettingNumber
	st.check = func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < least || (most >= least && n > most) {
			return settingError(st.Name, msg, "", nil)
		}
		return nil
	}
	st.set = func(a *App, v string) error {
		n, _ := strconv.ParseInt(v, 10, 64)
		return set(a, n)
	}
	return st
}

func timeoutSetting(which Timeout, label, what string) Setting {
	st := numberSetting(Setting{
		Name: which.Setting(), Label: label, Section: SectionTimeouts, Unit: "s", Scale: 1000,
		Help: "upstream timeout " + what + ", in milliseconds: 0 restores the default, else at least 1000",
		Show: func(a *App) string { return strconv.FormatInt(a.Settings().Timeouts.InForce(which).Milliseconds(), 10) },
	}, 0, -1, "", func(a *App, ms int64) error {
		return a.update(func(s *Settings) error {
			field, _ := s.Timeouts.field(which)
			*field = ms
			return nil
		})
	})
	st.check = func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || (n > 0 && n < 1000) {
			return settingError(st.Name, "must be 0 (the default) or a number of milliseconds of at least 1000: a shorter timeout would cut healthy upstreams", "", nil)
		}
		return nil
	}
	return st
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
