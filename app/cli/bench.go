package cli

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/codexrelay/codexrelay/app"
	"github.com/codexrelay/codexrelay/app/ledger"
	"github.com/codexrelay/codexrelay/app/relay"
	"github.com/codexrelay/codexrelay/proxy"
	"github.com/codexrelay/codexrelay/proxy/bench"
)

// benchCommand is `codexrelay bench`: the benchmarks, which print a table or one JSON object.
var benchCommand = &command{
	name: "bench",
	subs: []*command{
		{
			name:    "serialization",
			usage:   []string{"[--samples 500] [--items 10000] [--attempts 3] [--json]"},
			summary: "the per-request serialization cache against serializing every attempt",
			flags:   benchSerializationFlags,
		},
		{
			name:    "catalog",
			usage:   []string{"[--samples 50] [--concurrent 8] [--delay-ms 50] [--json]"},
			summary: "the catalog's stale-while-revalidate against a blocking refresh",
			flags:   benchCatalogFlags,
		},
		{
			name:    "proxy",
			usage:   []string{"[--in-process] [--idle-wait 60s] [--json]"},
			summary: "added latency against a direct call, event delay, load and memory",
			details: "The loads run against a relay and a bare ReverseProxy, each in a process of its own unless --in-process. " +
				"--only runs the phases it names (" + strings.Join(bench.ProxyPhases(), ", ") + "); budget is issue 49's figures: " +
				"continuations of a large conversation a Chat account serves, small requests beside slow uploads, and the re-makes " +
				"of a compaction after a rotation, each against a relay of its own.",
			flags: benchProxyFlags,
		},
		{
			name:    "conversation",
			usage:   []string{"[--turns 20] [--rounds 5] [--json]"},
			summary: "a growing conversation over HTTP and over WebSocket: bytes per turn and added time",
			details: "The same phase runs inside bench proxy; this runs it alone.",
			flags:   benchConversationFlags,
		},
		{
			name:    "sockets",
			usage:   []string{"[--sockets 20] [--frame-mb 60] [--turns 16] [--held 40] [--json]"},
			summary: "hostile WebSocket clients against the relay's memory bounds",
			details: "Many sockets each sending one huge frame at once, then one socket chaining turns of huge frames whose input is one tiny item, then sockets that each send one huge frame and stay open; the peak resident memory of each, and what the held sockets keep.",
			flags:   benchSocketsFlags,
		},
		{
			name:    "keys",
			usage:   []string{"[--requests 150] [--key-mb 16] [--json]"},
			summary: "long client session keys against the relay's memory",
			details: "Requests that each carry a distinct, long prompt_cache_key, to a model nobody serves and to one an account serves; the peak and idle resident memory, and the size of the recent traces.",
			flags:   benchKeysFlags,
		},
		{
			name:    "pool",
			usage:   []string{"[--seed 1] [--accounts 6] [--days 7] [--load 1] [--spark 0.15] [--json]"},
			summary: "a simulated week of Codex use through the pool, per routing strategy, against hindsight",
			details: "The real pool on a virtual clock: conversations in working hours over accounts with five-hour and weekly windows " +
				"and a Spark bucket, usage read every five minutes. Per strategy (" + strings.Join(proxy.Strategies, ", ") + ", and hindsight, " +
				"the most any routing could serve knowing the whole week): the share of demand served, the share of the weekly windows " +
				"that reset unused, the limits a client saw while an account had quota, and the turns that moved to another account.",
			flags: benchPoolFlags,
		},
		benchProcessCommand("relay"),
		benchProcessCommand("bare"),
		benchProcessCommand("chat"),
		benchProcessCommand("compaction"),
	},
}

// result is what a benchmark returns: figures that print as a table or as JSON.
type result interface{ Print(w io.Writer) }

// printResult prints r as a table, or as one JSON object.
func (c *CLI) printResult(r result, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(c.Stdout).Encode(r)
	}
	r.Print(c.Stdout)
	return nil
}

// benchSerializationFlags declares the flags of `bench serialization`.
func benchSerializationFlags(fs *flag.FlagSet) runFunc {
	var opt bench.SerializationOptions
	fs.IntVar(&opt.Samples, "samples", 500, "samples of each variant")
	fs.IntVar(&opt.Items, "items", 10000, "Responses input items in the synthetic payload")
	fs.IntVar(&opt.Attempts, "attempts", 3, "attempts (accounts tried) per request")
	asJSON := fs.Bool("json", false, "print one JSON object")
	return func(c *CLI, _ []string) error {
		if opt.Samples < 1 || opt.Items < 1 || opt.Attempts < 1 {
			return usagef("--samples, --items and --attempts must be at least 1")
		}
		return c.printResult(bench.Serialization(opt), *asJSON)
	}
}

// benchLedger is bench proxy's usage ledger: the relay's own, in a folder of the benchmark's.
func benchLedger(dir string) (bench.Ledger, error) {
	l, err := ledger.Open(ledger.Options{Path: filepath.Join(dir, "usage.db")})
	if err != nil {
		return bench.Ledger{}, err
	}
	return bench.Ledger{
		Hook:  func(t proxy.Trace) { l.Record(relay.LedgerRow(t)) },
		Flush: l.Flush,
		Close: func() (int64, error) {
			err := l.Close()
			return l.Stats().Written, err
		},
	}, nil
}

// benchConversationFlags declares the flags of `bench conversation`.
func benchConversationFlags(fs *flag.FlagSet) runFunc {
	turns := fs.Int("turns", 20, "turns of the conversation")
	rounds := fs.Int("rounds", 5, "times the conversation is played each way")
	asJSON := fs.Bool("json", false, "print one JSON object")
	return func(c *CLI, _ []string) error {
		if *turns < 1 || *rounds < 1 {
			return usagef("--turns and --rounds must be at least 1")
		}
		r, err := bench.Conversation(*turns, *rounds)
		if err != nil {
			return err
		}
		return c.printResult(r, *asJSON)
	}
}

// benchCatalogFlags declares the flags of `bench catalog`.
func benchCatalogFlags(fs *flag.FlagSet) runFunc {
	var opt bench.CatalogOptions
	fs.IntVar(&opt.Samples, "samples", 50, "groups of concurrent requests")
	fs.IntVar(&opt.Concurrent, "concurrent", 8, "requests per group")
	delay := fs.Int("delay-ms", 50, "simulated discovery time in milliseconds")
	asJSON := fs.Bool("json", false, "print one JSON object")
	return func(c *CLI, _ []string) error {
		if opt.Samples < 1 || opt.Concurrent < 1 || *delay < 0 {
			return usagef("--samples and --concurrent must be at least 1, --delay-ms at least 0")
		}
		opt.Delay = time.Duration(*delay) * time.Millisecond
		return c.printResult(bench.Catalog(opt), *asJSON)
	}
}

// benchProxyFlags declares the flags of `bench proxy`.
func benchProxyFlags(fs *flag.FlagSet) runFunc {
	var opt bench.ProxyOptions
	fs.IntVar(&opt.SmallRequests, "small", 5000, "small requests per side")
	fs.IntVar(&opt.Concurrent, "concurrent", 500, "concurrent streams")
	fs.IntVar(&opt.SoakRequests, "soak", 20000, "sequential requests for the memory soak")
	fs.IntVar(&opt.LargeConcurrent, "large-concurrent", 2000, "concurrent streams of the larger load")
	fs.IntVar(&opt.Rounds, "rounds", 5, "times each load is repeated")
	fs.DurationVar(&opt.IdleWait, "idle-wait", 60*time.Second, "how long after the loads the relay's memory is read again")
	inProcess := fs.Bool("in-process", false, "run the loads through an in-process relay and bare proxy too (no processes of their own)")
	only := fs.String("only", "", "run only the phases `NAMES` says, comma-separated, of: "+strings.Join(bench.ProxyPhases(), ", "))
	replayMB := fs.Int("replay-mb", 60, "budget: size of the conversation a Chat account serves, in MiB")
	fs.IntVar(&opt.Continuations, "continuations", 16, "budget: concurrent requests continuing that conversation")
	fs.IntVar(&opt.Uploads, "uploads", 8, "budget: slow uploads beside the small requests")
	uploadMB := fs.Int("upload-mb", 60, "budget: the Content-Length each slow upload declares, in MiB")
	fs.DurationVar(&opt.UploadFor, "upload-for", 10*time.Second, "budget: how long the slow uploads trickle")
	fs.IntVar(&opt.RemakeTurns, "remake-turns", 16, "budget: concurrent turns of a compacted conversation after a rotation")
	remakeMB := fs.Int("remake-mb", 32, "budget: size of the request that made the compaction, in MiB")
	asJSON := fs.Bool("json", false, "print one JSON object")
	return func(c *CLI, _ []string) error {
		if *only != "" {
			opt.Only = strings.Split(*only, ",")
			for _, p := range opt.Only {
				if !slices.Contains(bench.ProxyPhases(), p) {
					return usagef("unknown phase %q for --only: use %s", p, strings.Join(bench.ProxyPhases(), ", "))
				}
			}
		}
		if *replayMB < 1 || *replayMB > 60 || *uploadMB < 1 || *uploadMB > 63 || *remakeMB < 1 || *remakeMB > 60 {
			return usagef("--replay-mb and --remake-mb must be from 1 to 60, --upload-mb from 1 to 63 (the body limit is 64 MiB)")
		}
		if opt.Continuations < 1 || opt.Uploads < 1 || opt.RemakeTurns < 1 || opt.UploadFor <= 0 || opt.UploadFor > 10*time.Minute {
			return usagef("--continuations, --uploads and --remake-turns must be at least 1, --upload-for above 0 and at most 10m")
		}
		opt.ReplayBytes, opt.UploadBytes, opt.RemakeBytes = *replayMB<<20, *uploadMB<<20, *remakeMB<<20
		if !*inProcess {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			opt.StartProcess = bench.StartProcesses(exe, c.Stderr, func(kind string) []string { return []string{"bench", kind + "-process"} })
		}
		opt.Ledger = benchLedger
		r, err := bench.Proxy(opt)
		if err != nil {
			return err
		}
		return c.printResult(r, *asJSON)
	}
}

// benchProcessCommand is `bench relay-process` or `bench bare-process`, internal: the relay
// (or the bare ReverseProxy) of `bench proxy` in a process of its own, in front of
// --upstream, its base URL on the first line of output. Each "settle" line on stdin is
// answered with the settled RSS in bytes and the goroutine count; it ends when stdin closes
// (the benchmark stops it, or died).
func benchProcessCommand(kind string) *command {
	return &command{
		name:    kind + "-process",
		usage:   []string{"--upstream URL"},
		summary: "internal to bench proxy: its " + kind + " proxy in a process of its own",
		hidden:  true,
		flags: func(fs *flag.FlagSet) runFunc {
			upstream := fs.String("upstream", "", "the fake upstream's base `URL`")
			return func(c *CLI, _ []string) error {
				return bench.ServeProcess(kind, *upstream, c.Stdin, c.Stdout, func() { app.SetMemoryLimit(os.Getenv) })
			}
		},
	}
}

// benchSocketsFlags declares the flags of `bench sockets`.
func benchSocketsFlags(fs *flag.FlagSet) runFunc {
	var opt bench.SocketsOptions
	fs.IntVar(&opt.Sockets, "sockets", 20, "sockets that each send one huge frame at once")
	frameMB := fs.Int("frame-mb", 60, "size of each huge frame, in MiB")
	fs.IntVar(&opt.Turns, "turns", 16, "turns of huge frames on one socket")
	fs.IntVar(&opt.Held, "held", 40, "sockets that each send one huge frame and stay open")
	asJSON := fs.Bool("json", false, "print one JSON object")
	return func(c *CLI, _ []string) error {
		if opt.Sockets < 1 || opt.Turns < 1 || opt.Held < 1 || *frameMB < 1 || *frameMB > 63 {
			return usagef("--sockets, --turns and --held must be at least 1, --frame-mb from 1 to 63 (the frame limit is 64 MiB)")
		}
		opt.FrameBytes = *frameMB << 20
		app.SetMemoryLimit(os.Getenv) // as the relay runs
		r, err := bench.Sockets(opt)
		if err != nil {
			return err
		}
		return c.printResult(r, *asJSON)
	}
}

// benchKeysFlags declares the flags of `bench keys`.
func benchKeysFlags(fs *flag.FlagSet) runFunc {
	var opt bench.KeysOptions
	fs.IntVar(&opt.Requests, "requests", 150, "requests of each kind (a model nobody serves, a served one)")
	keyMB := fs.Int("key-mb", 16, "size of each prompt_cache_key, in MiB")
	asJSON := fs.Bool("json", false, "print one JSON object")
	return func(c *CLI, _ []string) error {
		if opt.Requests < 1 || *keyMB < 1 || *keyMB > 63 {
			return usagef("--requests must be at least 1, --key-mb from 1 to 63 (the body limit is 64 MiB)")
		}
		opt.KeyBytes = *keyMB << 20
		app.SetMemoryLimit(os.Getenv) // as the relay runs
		r, err := bench.Keys(opt)
		if err != nil {
			return err
		}
		return c.printResult(r, *asJSON)
	}
}

// benchPoolFlags declares the flags of `bench pool`.
func benchPoolFlags(fs *flag.FlagSet) runFunc {
	var opt bench.PoolOptions
	fs.Uint64Var(&opt.Seed, "seed", 1, "the simulated week's seed (the same seed, the same week)")
	fs.IntVar(&opt.Accounts, "accounts", 6, "accounts in the pool")
	fs.IntVar(&opt.Days, "days", 7, "days simulated, from a Monday")
	fs.Float64Var(&opt.Load, "load", 1, "the week's demand over the capacity its weekly windows hold")
	spark := fs.Float64("spark", 0.15, "the share of conversations on the Spark model (its own bucket)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	return func(c *CLI, _ []string) error {
		if opt.Seed < 1 || opt.Accounts < 1 || opt.Accounts > 100 || opt.Days < 1 || opt.Days > 28 {
			return usagef("--seed must be at least 1, --accounts from 1 to 100, --days from 1 to 28")
		}
		if !(opt.Load > 0 && opt.Load <= 10) || !(*spark >= 0 && *spark <= 1) {
			return usagef("--load must be above 0 and at most 10, --spark from 0 to 1")
		}
		opt.Spark = *spark
		if opt.Spark == 0 {
			opt.Spark = -1 // none (0 takes the default)
		}
		r, err := bench.Pool(opt)
		if err != nil {
			return err
		}
		return c.printResult(r, *asJSON)
	}
}
