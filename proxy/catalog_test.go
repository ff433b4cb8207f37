package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/codexrelay/codexrelay/proxy"
)

// listing answers GET /models with the OpenAI list shape of ids, after gate lets it (nil: at once).
func listing(gate chan struct{}, ids ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if gate != nil {
			<-gate
		}
		var data []map[string]string
		for _, id := range ids {
			data = append(data, map[string]string{"id": id, "object": "model"})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	}
}

func (u *upstream) setModels(h func(w http.ResponseWriter, r *http.Request)) {
	u.mu.Lock()
	u.models = h
	u.mu.Unlock()
}

func (u *upstream) listings() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.listed
}

const (
	ttl      = 10 * time.Minute
	staleMax = 30 * time.Minute
)

func catalogRelay(t *testing.T, clk *clock, swr bool, accounts ...proxy.Account) *relay {
	return newRelay(t, proxy.Options{Now: clk.Now, Catalog: proxy.CatalogOptions{
		TTL: ttl, StaleMaxAge: staleMax, StaleWhileRevalidate: swr, RefreshInterval: -1}}, accounts...)
}

// send posts a small request and returns its trace.
func (r *relay) send(t *testing.T, model string) proxy.Trace {
	t.Helper()
	before := len(r.Traces(0))
	readAll(t, r.post(t, "/v1/responses", `{"model":"`+model+`","input":"x","stream":true}`))
	r.lastTrace(t, before+1)
	return r.Traces(1)[0]
}

func TestStaleWhileRevalidateFollowsTheSeed(t *testing.T) {
	clk := newClock()
	up := newUpstream(t, answerText("ok"))
	var gate chan struct{}
	var gateMu sync.Mutex
	up.setModels(func(w http.ResponseWriter, r *http.Request) {
		gateMu.Lock()
		g := gate
		gateMu.Unlock()
		listing(g, "gpt-5")(w, r)
	})
	closeGate := func() chan struct{} {
		g := make(chan struct{})
		gateMu.Lock()
		gate = g
		gateMu.Unlock()
		return g
	}
	r := catalogRelay(t, clk, true, openaiAccount("a", up))

	// The first catalog blocks.
	if tr := r.send(t, "gpt-5"); tr.ModelCatalogRefresh != (proxy.RefreshCounts{Blocking: 1}) {
		t.Fatalf("first request: %+v", tr.ModelCatalogRefresh)
	}
	if up.listings() != 1 || r.Stats().Catalog.Models != 1 || r.Stats().Catalog.AgeMs != 0 {
		t.Fatalf("listings %d, stats %+v", up.listings(), r.Stats().Catalog)
	}
	// A fresh catalog is used at once; its age ticks with the clock.
	clk.Advance(ttl - time.Second)
	if tr := r.send(t, "gpt-5"); tr.ModelCatalogRefresh != (proxy.RefreshCounts{}) || up.listings() != 1 {
		t.Fatalf("fresh: %+v, listings %d", tr.ModelCatalogRefresh, up.listings())
	}
	if age := r.Stats().Catalog.AgeMs; age != (ttl - time.Second).Milliseconds() {
		t.Fatalf("age %d", age)
	}

	// Stale but younger than the maximum: served at once while one refresh runs in the
	// background. The discovery is held, so a request that waited for it could not finish.
	clk.Advance(2 * time.Second)
	release := closeGate()
	for i := 0; i < 3; i++ {
		if tr := r.send(t, "gpt-5"); tr.ModelCatalogRefresh != (proxy.RefreshCounts{Background: 1}) {
			t.Fatalf("stale request %d: %+v", i, tr.ModelCatalogRefresh)
		}
	}
	eventually(t, "the background discovery to start", func() bool { return up.listings() == 2 })
	close(release)
	eventually(t, "the background refresh", func() bool { return r.Stats().Catalog.AgeMs == 0 })
	if up.listings() != 2 {
		t.Fatalf("concurrent stale requests ran %d refreshes", up.listings()-1)
	}

	// Older than the maximum age: blocking again, and concurrent requests share one refresh.
	clk.Advance(staleMax + time.Second)
	release = closeGate()
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			readAll(t, r.post(t, "/v1/responses", `{"model":"gpt-5","input":"x","stream":true,"prompt_cache_key":"k`+string(rune('0'+i))+`"}`))
		}()
	}
	eventually(t, "the blocking discovery to start", func() bool { return up.listings() == 3 })
	eventually(t, "all three requests waiting", func() bool { return r.Stats().Requests.InFlight == 3 })
	if n := len(up.requests()); n != 5 {
		t.Fatalf("a request went upstream before the blocking refresh ended (%d)", n)
	}
	close(release)
	wg.Wait()
	r.lastTrace(t, 8)
	var total proxy.RefreshCounts
	for _, tr := range r.Traces(3) {
		total.Blocking += tr.ModelCatalogRefresh.Blocking
		total.Shared += tr.ModelCatalogRefresh.Shared
		total.Background += tr.ModelCatalogRefresh.Background
	}
	if total != (proxy.RefreshCounts{Blocking: 1, Shared: 2}) || up.listings() != 3 {
		t.Fatalf("old catalog: %+v, listings %d", total, up.listings())
	}
	if s := r.Stats().Catalog.Refresh; s != (proxy.RefreshCounts{Background: 3, Blocking: 2, Shared: 2}) {
		t.Fatalf("stats totals %+v", s)
	}
}

func TestBlockingWhenStaleWhileRevalidateIsOff(t *testing.T) {
	clk := newClock()
	up := newUpstream(t, answerText("ok"))
	up.setModels(listing(nil, "gpt-5"))
	r := catalogRelay(t, clk, false, openaiAccount("a", up))
	r.send(t, "gpt-5")
	clk.Advance(ttl + time.Second)
	if tr := r.send(t, "gpt-5"); tr.ModelCatalogRefresh != (proxy.RefreshCounts{Blocking: 1}) {
		t.Fatalf("swr off: %+v", tr.ModelCatalogRefresh)
	}
	if st := r.Stats().Catalog; st.SWREnabled || st.AgeMs != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Turned on at runtime, without a restart.
	r.SetCatalogOptions(true, staleMax, 0)
	clk.Advance(ttl + time.Second)
	if tr := r.send(t, "gpt-5"); tr.ModelCatalogRefresh != (proxy.RefreshCounts{Background: 1}) {
		t.Fatalf("swr on: %+v", tr.ModelCatalogRefresh)
	}
	if !r.Stats().Catalog.SWREnabled {
		t.Fatal("stats do not show the live setting")
	}
	// A shorter maximum age at runtime makes the same age block.
	eventually(t, "the refresh", func() bool { return r.Stats().Catalog.AgeMs == 0 })
	r.SetCatalogOptions(true, ttl, 0)
	clk.Advance(ttl + time.Second)
	if tr := r.send(t, "gpt-5"); tr.ModelCatalogRefresh != (proxy.RefreshCounts{Blocking: 1}) {
		t.Fatalf("beyond the max age: %+v", tr.ModelCatalogRefresh)
	}
}

func TestModelsRouteStaysBlockingAndSpeaksBothShapes(t *testing.T) {
	clk := newClock()
	codexEntry := `{"slug":"gpt-5-codex","display_name":"GPT-5 Codex","supported_reasoning_levels":[{"effort":"high","description":"deep"}],"shell_type":"shell_command","visibility":"list","supported_in_api":true,"priority":1,"base_instructions":"You are Codex.","support_verbosity":false,"truncation_policy":{"mode":"tokens","limit":10000},"experimental_supported_tools":[],"context_window":272000,"future_field":{"x":1}}`
	cg := newUpstream(t, answerText("ok"))
	cg.setModels(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("client_version") == "" || r.Header.Get("chatgpt-account-id") != "acct-me" {
			http.Error(w, "no client_version", 400)
			return
		}
		io.WriteString(w, `{"models":[`+codexEntry+`]}`)
	})
	key := newUpstream(t, answerText("ok"))
	key.setModels(listing(nil, "gpt-4.1", "gpt-5-codex"))
	r := catalogRelay(t, clk, true, chatgptAccount("me", cg), openaiAccount("key", key))
	if err := r.SetAliases(map[string][]string{"fast": {"gpt-4.1"}, "codex": {"gpt-5-codex", "gpt-4.1"}}); err != nil {
		t.Fatal(err)
	}

	client := r.sdk()
	page, err := client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "gpt-5-codex,gpt-4.1,codex,fast" {
		t.Fatalf("ids %v", ids)
	}
	m, err := client.Models.Get(context.Background(), "gpt-4.1")
	if err != nil || m.ID != "gpt-4.1" {
		t.Fatalf("get: %v %v", m, err)
	}
	_, err = client.Models.Get(context.Background(), "gpt-4.2")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" || !strings.Contains(apiErr.Message, "gpt-4.1") {
		t.Fatalf("unknown model: %v", err)
	}

	resp, _ := http.Get(r.URL + "/v1/models?client_version=0.171.0")
	body := readAll(t, resp)
	var v struct {
		Models []json.RawMessage `json:"models"`
	}
	json.Unmarshal(body, &v)
	if len(v.Models) != 4 {
		t.Fatalf("models %s", body)
	}
	// A ChatGPT entry passes through as the backend gave it.
	if string(v.Models[0]) != codexEntry {
		t.Fatalf("entry changed:\n%s\n%s", v.Models[0], codexEntry)
	}
	// Every other entry has every field the Codex CLI requires, of the right type.
	for _, raw := range v.Models[1:] {
		var e map[string]any
		json.Unmarshal(raw, &e)
		checkCodexEntry(t, e)
	}

	// /v1/models never serves a stale catalog: it waits for the refresh.
	clk.Advance(ttl + time.Second)
	before := key.listings()
	readAll(t, func() *http.Response { resp, _ := http.Get(r.URL + "/models"); return resp }())
	if key.listings() != before+1 || r.Stats().Catalog.AgeMs != 0 {
		t.Fatal("/models served a stale catalog")
	}
}

func checkCodexEntry(t *testing.T, e map[string]any) {
	t.Helper()
	str := func(k string) string {
		s, ok := e[k].(string)
		if !ok {
			t.Errorf("%v: %s is not a string", e["slug"], k)
		}
		return s
	}
	str("slug")
	str("display_name")
	str("base_instructions")
	if s := str("shell_type"); !slices.Contains([]string{"default", "local", "unified_exec", "disabled", "shell_command"}, s) {
		t.Errorf("shell_type %q", s)
	}
	if s := str("visibility"); !slices.Contains([]string{"list", "hide", "none"}, s) {
		t.Errorf("visibility %q", s)
	}
	for _, k := range []string{"supported_in_api", "support_verbosity"} {
		if _, ok := e[k].(bool); !ok {
			t.Errorf("%s not a bool", k)
		}
	}
	if p, ok := e["priority"].(float64); !ok || p != float64(int(p)) {
		t.Errorf("priority %v", e["priority"])
	}
	for _, k := range []string{"supported_reasoning_levels", "experimental_supported_tools"} {
		if _, ok := e[k].([]any); !ok {
			t.Errorf("%s not an array", k)
		}
	}
	tp, _ := e["truncation_policy"].(map[string]any)
	if m := tp["mode"]; m != "bytes" && m != "tokens" {
		t.Errorf("truncation_policy %v", e["truncation_policy"])
	}
	if _, ok := tp["limit"].(float64); !ok {
		t.Errorf("truncation_policy.limit %v", tp["limit"])
	}
}

func TestDiscoveryAsksEveryAccountAtOnce(t *testing.T) {
	// Each listing waits until all three accounts were asked: asked one after the other, the
	// first would wait forever and the catalog would time out with no models.
	var arrived sync.WaitGroup
	arrived.Add(3)
	var accounts []proxy.Account
	for i, id := range []string{"m1", "m2", "m3"} {
		u := newUpstream(t, answerText("ok"))
		u.setModels(func(w http.ResponseWriter, r *http.Request) {
			arrived.Done()
			arrived.Wait()
			listing(nil, id)(w, r)
		})
		accounts = append(accounts, openaiAccount(string(rune('a'+i)), u))
	}
	r := newRelay(t, proxy.Options{Catalog: proxy.CatalogOptions{DiscoveryTimeout: 30 * time.Second, RefreshInterval: -1}}, accounts...)
	if tr := r.send(t, "m3"); tr.Attempts[0].Account != "c" {
		t.Fatalf("m3 went to %+v", tr.Attempts)
	}
	if st := r.Stats().Catalog; st.Models != 3 || st.LastError != "" {
		t.Fatalf("catalog %+v", st)
	}
}

func TestCatalogRoutesByModelAndKeepsLastGoodLists(t *testing.T) {
	clk := newClock()
	a := newUpstream(t, answerText("from a"))
	a.setModels(listing(nil, "m-a"))
	b := newUpstream(t, answerText("from b"))
	b.setModels(listing(nil, "m-b", "m-shared"))
	r := catalogRelay(t, clk, true, openaiAccount("a", a), openaiAccount("b", b))

	// Only the account that lists a model gets it, even when it comes second.
	if tr := r.send(t, "m-b"); len(tr.Attempts) != 1 || tr.Attempts[0].Account != "b" {
		t.Fatalf("m-b: %+v", tr.Attempts)
	}
	// A model nobody lists: 404 with close matches, nothing sent upstream.
	posts := len(a.requests()) + len(b.requests())
	resp := r.post(t, "/v1/responses", `{"model":"m-shard","input":"x"}`)
	if resp.StatusCode != 404 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if e := decodeErr(t, resp); e.Error.Code != "model_not_found" || !strings.Contains(e.Error.Message, "m-shared") {
		t.Fatalf("error %+v", e.Error)
	}
	if len(a.requests())+len(b.requests()) != posts {
		t.Fatal("an unknown model went upstream")
	}

	// b's listing fails: its last good list stays and the error shows.
	b.setModels(func(w http.ResponseWriter, r *http.Request) { http.Error(w, `{"error":{"message":"down"}}`, 500) })
	clk.Advance(ttl + time.Second)
	r.send(t, "m-a")
	eventually(t, "the refresh", func() bool { return r.Stats().Catalog.AgeMs == 0 })
	st := r.Stats().Catalog
	if st.Models != 3 || !strings.Contains(st.LastError, "b: listing models: HTTP 500") {
		t.Fatalf("catalog %+v", st)
	}
	if tr := r.send(t, "m-shared"); tr.Attempts[0].Account != "b" {
		t.Fatalf("m-shared: %+v", tr.Attempts)
	}

	// Adding an account invalidates the catalog: the next request refreshes it.
	c := newUpstream(t, answerText("from c"))
	c.setModels(listing(nil, "m-c"))
	r.SetAccounts([]proxy.Account{openaiAccount("a", a), openaiAccount("b", b), openaiAccount("c", c)})
	if tr := r.send(t, "m-a"); tr.ModelCatalogRefresh != (proxy.RefreshCounts{Background: 1}) {
		t.Fatalf("after adding an account: %+v", tr.ModelCatalogRefresh)
	}
	eventually(t, "c's models", func() bool { return r.Stats().Catalog.Models == 4 })
	if tr := r.send(t, "m-c"); tr.Attempts[0].Account != "c" {
		t.Fatalf("m-c: %+v", tr.Attempts)
	}
}

func TestUnknownModelGoesToAccountsWithoutAList(t *testing.T) {
	listed := newUpstream(t, answerText("listed"))
	listed.setModels(listing(nil, "m1"))
	unlisted := newUpstream(t, answerText("unlisted")) // its /models is a 404
	r := newRelay(t, proxy.Options{Catalog: proxy.CatalogOptions{RefreshInterval: -1}}, openaiAccount("a", listed), openaiAccount("b", unlisted))
	if tr := r.send(t, "local-llama"); len(tr.Attempts) != 1 || tr.Attempts[0].Account != "b" {
		t.Fatalf("attempts %+v", tr.Attempts)
	}
}

func TestAliasesAndToolFiltering(t *testing.T) {
	clk := newClock()
	a := newUpstream(t, status(429, `{}`))
	a.setModels(listing(nil, "big"))
	b := newUpstream(t, answerText("small answered"))
	b.setModels(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"models":[{"slug":"small","display_name":"small","supported_reasoning_levels":[],"shell_type":"default","visibility":"list","supported_in_api":true,"priority":2,"base_instructions":"x","support_verbosity":false,"truncation_policy":{"mode":"bytes","limit":1},"experimental_supported_tools":[],"supports_search_tool":false}]}`)
	})
	r := catalogRelay(t, clk, true, openaiAccount("a", a), chatgptAccount("b", b))
	if err := r.SetAliases(map[string][]string{"x": {"y"}, "y": {"x"}}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("cycle: %v", err)
	}
	if err := r.SetAliases(map[string][]string{"best": {"big", "small"}, "big": {"small"}}); err != nil {
		t.Fatal(err)
	}
	body := `{"model":"best","input":"x","stream":true,"tools":[{"type":"function","name":"shell","parameters":{}},{"type":"tool_search"},{"type":"brand_new"}]}`
	resp := r.post(t, "/v1/responses", body)
	if got := readAll(t, resp); !bytes.Contains(got, []byte("small answered")) {
		t.Fatalf("answer %.200s", got)
	}
	tr := r.lastTrace(t, 1)
	if tr.Model != "best" || tr.ResolvedModel != "small" || len(tr.Attempts) != 2 {
		t.Fatalf("trace %+v", tr)
	}
	if strings.Join(tr.DroppedTools, ",") != "tool_search" {
		t.Fatalf("dropped %v", tr.DroppedTools)
	}
	first, second := a.requests()[0].Body, b.requests()[0].Body
	if !bytes.Contains(first, []byte(`"model":"big"`)) || !bytes.Contains(first, []byte("tool_search")) {
		t.Fatalf("first attempt body %s", first)
	}
	if !bytes.Contains(second, []byte(`"model":"small"`)) || bytes.Contains(second, []byte("tool_search")) ||
		!bytes.Contains(second, []byte("brand_new")) || !bytes.Contains(second, []byte(`"name":"shell"`)) {
		t.Fatalf("second attempt body %s", second)
	}
	// "big" is a real model, so the alias of the same name is ignored and reported.
	if errs := r.Stats().Catalog.AliasErrors; len(errs) != 1 || !strings.Contains(errs[0], `"big" shadows a real model`) {
		t.Fatalf("alias errors %v", errs)
	}
}

func TestScheduledRefreshRunsWhileServing(t *testing.T) {
	up := newUpstream(t, answerText("ok"))
	up.setModels(listing(nil, "m1"))
	s := proxy.New(proxy.Options{Catalog: proxy.CatalogOptions{TTL: time.Hour, RefreshInterval: 5 * time.Millisecond}})
	s.SetAccounts([]proxy.Account{openaiAccount("a", up)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, time.Second) }()
	// No request at all: the schedule alone keeps the catalog current.
	eventually(t, "three scheduled refreshes", func() bool { return up.listings() >= 3 })
	if st := s.Stats().Catalog; st.Models != 1 || st.Refresh != (proxy.RefreshCounts{}) {
		t.Fatalf("catalog %+v", st)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n := up.listings()
	time.Sleep(30 * time.Millisecond)
	if up.listings() > n+1 {
		t.Fatal("the schedule kept running after Serve returned")
	}
}

// An API key the upstream refuses while listing models is key_rejected at once, before a
// request finds out; a request never goes to it.
func TestModelListRefusalRejectsTheKey(t *testing.T) {
	bad := newUpstream(t, answerText("never"))
	bad.setModels(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided","code":"invalid_api_key"}}`)
	})
	good := newUpstream(t, answerText("ok"))
	good.setModels(listing(nil, "gpt-5"))
	r := catalogRelay(t, newClock(), true, openaiAccount("bad", bad), openaiAccount("good", good))
	readAll(t, r.post(t, "/v1/responses", `{"model":"gpt-5","input":"hi","stream":true}`))
	if st := r.account(t, "bad"); st.State != proxy.StateKeyRejected || !strings.Contains(st.LastError, "refused the API key") {
		t.Fatalf("bad: %+v", st)
	}
	if n := len(bad.requests()); n != 0 {
		t.Fatalf("a rejected key got %d requests", n)
	}
	if st := r.account(t, "good"); st.Requests != 1 {
		t.Errorf("good counts %d requests, want 1 (model lists are not requests)", st.Requests)
	}
}

// The first request after an account change does not miss the new account: the catalog is
// invalidated and served stale while it refreshes, and until the refresh has listed the
// account that was added (or enabled), that account may take any model. Here the only other
// account is disabled, and the new account's listing is held, so the request is routed with
// the stale catalog.
func TestAnAccountAddedWhileTheCatalogIsServedStaleIsNotMissed(t *testing.T) {
	clk := newClock()
	old := newUpstream(t, answerText("old"))
	old.setModels(listing(nil, "gpt-5"))
	fresh := newUpstream(t, answerText("new"))
	gate := make(chan struct{})
	fresh.setModels(listing(gate, "gpt-5"))
	defer close(gate)
	r := catalogRelay(t, clk, true, openaiAccount("old", old))
	if tr := r.send(t, "gpt-5"); tr.Status != 200 {
		t.Fatalf("before the change: %+v", tr)
	}
	disabled := openaiAccount("old", old)
	disabled.Disabled = true
	r.SetAccounts([]proxy.Account{disabled, openaiAccount("new", fresh)})
	tr := r.send(t, "gpt-5")
	if tr.Status != 200 || len(tr.Attempts) == 0 || tr.Attempts[len(tr.Attempts)-1].Account != "new" {
		t.Fatalf("the first request after the change: %+v", tr)
	}
	if tr.ModelCatalogRefresh != (proxy.RefreshCounts{Background: 1}) {
		t.Fatalf("not served from the stale catalog: %+v", tr.ModelCatalogRefresh)
	}
}

// With no account at all, the model list answers the clear 503 a request gets, not an empty
// list (Codex reads one as "No models are available", issue 50); with one, the list.
func TestModelsWithNoAccountSayWhy(t *testing.T) {
	r := newRelay(t, proxy.Options{})
	for _, path := range []string{"/v1/models", "/v1/models/gpt-5", "/models"} {
		resp, err := http.Get(r.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		if e := decodeErr(t, resp); resp.StatusCode != 503 || e.Error.Code != "no_accounts" || !strings.Contains(e.Error.Message, "accounts add") {
			t.Fatalf("%s: %d %+v", path, resp.StatusCode, e)
		}
	}
	up := newUpstream(t, answerText("x"))
	r.SetAccounts([]proxy.Account{openaiAccount("a", up)})
	resp, err := http.Get(r.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("with an account: %d", resp.StatusCode)
	}
}
