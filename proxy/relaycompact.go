package proxy

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/codexrelay/codexrelay/proxy/bridge"
	"github.com/codexrelay/codexrelay/proxy/payload"
)

// Compaction on a Chat Completions account. Such an account cannot compact (it knows no
// compaction_trigger, and seals nothing), so the relay makes the compaction itself, as Codex does
// with a provider that cannot: the model summarizes the conversation (Codex's own checkpoint
// prompt, testdata/codex-0.171/compact-local), and the relay seals the summary with its own key
// into the one compaction item the client expects. A compaction item the relay sealed is no
// account's to read: wherever the request goes, it is expanded into the summary as text (the
// user message Codex itself writes after a local compaction), by the input's edits
// (sealedit.go). A compaction another account sealed is re-made on a Chat account the same way,
// from the request the relay kept (compaction.go), once for all Chat accounts (relaySealer), so
// that a conversation compacted on any account keeps its memory on a Chat account too.

// relaySealer is the account key under which the relay's own compactions of a kept request are
// remembered (compactionStore.remadeFor): every Chat account shares them.
const relaySealer = "relay"

// relaySealPrefix starts the sealed value of a compaction the relay made (AES-GCM under
// Options.SealKey, base64url).
const relaySealPrefix = "crcmp1."

// compactPrompt is Codex 0.171's checkpoint prompt (compact-local/003).
const compactPrompt = "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.\n\n" +
	"Include:\n- Current progress and key decisions made\n- Important context, constraints, or user preferences\n" +
	"- What remains to be done (clear next steps)\n- Any critical data, examples, or references needed to continue\n\n" +
	"Be concise, structured, and focused on helping the next LLM seamlessly continue the work.\n"

// summaryPrefix opens the summary where a compaction stood (compact-local/004).
const summaryPrefix = "Another language model started to solve this problem and produced a summary of its thinking process. " +
	"You also have access to the state of the tools that were used by that language model. Use this to build on the work " +
	"that has already been done and avoid duplicating work. Here is the summary produced by the other language model, use " +
	"the information in this summary to assist with your own analysis:\n"

// newSealAEAD is the relay's sealing cipher: key (32 bytes) as given, else a new one for this
// process (its compactions are then expanded only until it stops).
func newSealAEAD(key []byte) cipher.AEAD {
	if len(key) != 32 {
		key = make([]byte, 32)
		rand.Read(key)
	}
	block, _ := aes.NewCipher(key)
	aead, _ := cipher.NewGCM(block)
	return aead
}

// sealCipher is the relay's sealing cipher, as Server.sealer holds it; kept says its key outlives
// the process (Options.SealKey, or the compactions' folder).
type sealCipher struct {
	aead  cipher.AEAD
	kept  bool
	tried bool // keeping it failed once: not tried again by this process
}

// sealSummary is the sealed value (raw JSON string) of a summary, under the kept key (made now,
// in the compactions' folder, if there is none yet).
func (s *Server) sealSummary(summary string) []byte {
	s.relaySeals.Store(true)
	if c := s.sealer.Load(); !c.kept && !c.tried && s.opt.CompactionDir != "" {
		s.sealKeyMu.Lock()
		if c := s.sealer.Load(); !c.kept && !c.tried {
			if key, err := loadSealKey(s.opt.CompactionDir); err != nil {
				s.log.Warn("the key of the relay's own compactions cannot be kept: those made now are read until the relay stops", "error", err)
				s.sealer.Store(&sealCipher{aead: c.aead, tried: true})
			} else {
				s.sealer.Store(&sealCipher{aead: newSealAEAD(key), kept: true})
			}
		}
		s.sealKeyMu.Unlock()
	}
	aead := s.sealer.Load().aead
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	ct := aead.Seal(nonce, nonce, []byte(summary), []byte(relaySealPrefix))
	return payload.AppendString(nil, relaySealPrefix+base64.RawURLEncoding.EncodeToString(ct))
}

// openSummary is the summary a sealed value (raw JSON string) holds, when the relay sealed it.
func (s *Server) openSummary(v []byte) (string, bool) {
	if !isRelaySealed(v) {
		return "", false
	}
	str, err := payload.DecodeString(v)
	if err != nil {
		return "", false
	}
	aead := s.sealer.Load().aead
	ct, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(str, relaySealPrefix))
	if err != nil || len(ct) < aead.NonceSize() {
		return "", false
	}
	n := aead.NonceSize()
	pt, err := aead.Open(nil, ct[:n], ct[n:], []byte(relaySealPrefix))
	return string(pt), err == nil
}

// isRelaySealed reports whether a sealed value (raw JSON string) is one the relay made.
func isRelaySealed(v []byte) bool { return bytes.HasPrefix(v, []byte(`"`+relaySealPrefix)) }

// summaryItem is the message that stands for a compaction the relay can read: its summary.
func summaryItem(summary string) []byte {
	text := payload.AppendString(nil, summaryPrefix+summary)
	return []byte(`{"type":"message","role":"user","content":[{"type":"input_text","text":` + string(text) + `}]}`)
}

// compactionTriggered reports whether a Responses input ends with the compaction trigger.
func compactionTriggered(items [][]byte) bool {
	return len(items) > 0 && isTrigger(items[len(items)-1])
}

func isTrigger(item []byte) bool {
	return bytes.Contains(item, []byte(`"compaction_trigger"`)) && bytes.Equal(bytes.Join(bytes.Fields(item), nil), compactionTrigger)
}

// chatCompactionBody is the Chat Completions request that has a Chat account summarize the
// conversation of a compaction request (items, the trigger last): the items before the trigger,
// their compactions expanded, then Codex's checkpoint prompt, not streamed, to tg's model.
func (x *exchange) chatCompactionBody(obj *payload.Object, items [][]byte, tg *target) ([]byte, error) {
	items = items[:len(items)-1]
	if exp, ok := x.expandCompactions(items); ok {
		items = exp
	}
	prompt := []byte(`{"type":"message","role":"user","content":[{"type":"input_text","text":` + string(payload.AppendString(nil, compactPrompt)) + `}]}`)
	ov := append(x.modelOverride(tg), payload.Override{Key: "input", Value: joinItems(items, [][]byte{prompt})},
		payload.Override{Key: "stream", Value: []byte("false")}, payload.Override{Key: "tools"},
		payload.Override{Key: "tool_choice"}, payload.Override{Key: "parallel_tool_calls"})
	req := payload.Build(nil, obj, ov)
	out, _, err := bridge.ResponsesToChatRequest(req)
	return out, err
}

// compactOverChatBody is the body of a compaction request (v2, or v1's) to a Chat account.
func compactOverChatBody(x *exchange, tr *accountTry) (builtBody, error) {
	items := x.body.items()
	if x.req.route == routeCompact {
		items = append(append([][]byte(nil), compactInput(x)...), compactionTrigger)
	}
	took, e := x.holdUpTo(3 * int64(len(x.body.whole().raw)))
	if e != nil {
		return builtBody{}, e
	}
	out, err := x.chatCompactionBody(x.req.obj, items, tr.tg)
	x.letGo(took - min(int64(len(out)), took))
	return builtBody{b: out}, err
}

// compactInput is a v1 compaction request's input as items (a string is one user message).
func compactInput(x *exchange) [][]byte {
	raw, _ := x.req.obj.Get("input")
	if payload.KindOf(raw) == payload.KindString {
		return [][]byte{[]byte(`{"type":"message","role":"user","content":` + string(raw) + `}`)}
	}
	return x.body.items()
}

// chatSummary reads the summary a Chat Completions answer holds.
func chatSummary(answer []byte) (string, error) {
	var v struct {
		Choices []struct {
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(answer, &v); err != nil || len(v.Choices) == 0 {
		return "", errors.New("the account's answer holds no message")
	}
	c := v.Choices[0].Message.Content
	var s string
	if json.Unmarshal(c, &s) != nil {
		var parts []struct {
			Text string `json:"text"`
		}
		json.Unmarshal(c, &parts)
		for _, p := range parts {
			s += p.Text
		}
	}
	if strings.TrimSpace(s) == "" {
		return "", errors.New("the account answered with an empty summary")
	}
	return s, nil
}

// relayCompactionItem is the compaction item the relay makes of a Chat account's summary.
func (x *exchange) relayCompactionItem(summary string) []byte {
	return []byte(`{"type":"compaction","id":"cmp_` + runID + "_" + x.t.ID + `","encrypted_content":` + string(x.s.sealSummary(summary)) + `}`)
}

// answerChatCompaction answers a compaction request a Chat account summarized: one compaction
// item the relay sealed, in a Response (streamed when the client streams) or, for v1, in v1's
// shape.
func (x *exchange) answerChatCompaction(a *answer) {
	x.noteUsage(a.plain)
	summary, err := chatSummary(a.plain)
	if err != nil {
		x.reject(&apiError{Status: http.StatusBadGateway, Type: "server_error", Code: "server_error",
			Message: "the account could not compact the conversation: " + err.Error()}, OutcomeError)
		return
	}
	item := x.relayCompactionItem(summary)
	usage := bridge.ResponsesUsage(a.plain)
	if x.req.route == routeCompact {
		v1 := fmt.Sprintf(`{"id":%q,"object":"response.compaction","created_at":%d,"output":%s,"usage":%s}`,
			x.madeResponseID(), x.times.start.Unix(), joinItems(append(x.keptUserMessages(compactInput(x)), item)), usage)
		x.writeJSONBody([]byte(v1))
		return
	}
	resp := x.madeResponse("", "completed")
	resp.Output, resp.Usage = []json.RawMessage{item}, usage
	if !x.req.stream {
		x.writeJSONBody(resp.JSON())
		return
	}
	if x.sink().start(http.Header{"Content-Type": {"text/event-stream"}}) != nil {
		x.clientGone()
		return
	}
	x.t.Status = http.StatusOK
	created := x.madeResponse(resp.ID, "in_progress")
	events := []struct {
		name string
		data string
	}{
		{"response.created", `{"type":"response.created","sequence_number":0,"response":` + string(created.JSON()) + `}`},
		{"response.output_item.done", `{"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":` + string(item) + `}`},
		{"response.completed", `{"type":"response.completed","sequence_number":2,"response":` + string(resp.JSON()) + `}`},
	}
	for _, ev := range events {
		if !x.emit(ev.name, []byte(ev.data), nil) {
			return
		}
	}
	x.sink().flush()
	x.t.Outcome = OutcomeCompleted
}

// sealKeyName is the file of the relay's sealing key in the compactions' folder.
const sealKeyName = "seal.key"

// loadSealKey reads the sealing key kept in dir (a folder of the user's: compactionStore.open
// checked it), making it on first use.
func loadSealKey(dir string) ([]byte, error) {
	name := filepath.Join(dir, sealKeyName)
	for range 2 {
		if key, err := readSealKey(name); err == nil || !errors.Is(err, os.ErrNotExist) {
			return key, err
		}
		// Written whole to a file of its own, synced, then linked in place (never over another
		// relay's): a crash leaves no key of fewer than 32 bytes.
		key := make([]byte, 32)
		rand.Read(key)
		f, err := os.CreateTemp(dir, ".seal-*")
		if err != nil {
			return nil, err
		}
		_, err = f.Write(key)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Link(f.Name(), name)
		}
		os.Remove(f.Name())
		if errors.Is(err, os.ErrExist) {
			continue // another relay made it meanwhile: read it
		}
		if err != nil {
			return nil, err
		}
		return key, nil
	}
	return nil, errors.New("the sealing key keeps changing under " + dir)
}

// readSealKey reads a sealing key file: a regular file of the user's, of 32 bytes, checked on
// the file it opened.
func readSealKey(name string) ([]byte, error) {
	if st, err := os.Lstat(name); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, errors.New(name + " is not a sealing key of the user's")
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || !ownedByUser(st) || st.Size() != 32 {
		return nil, errors.New(name + " is not a sealing key of the user's")
	}
	key := make([]byte, 32)
	_, err = io.ReadFull(f, key)
	return key, err
}

// streamedChatCompaction answers a compaction whose Chat account streamed though it was asked
// for one answer (the stream has begun): a failure the client retries, never a cut stream.
func (x *exchange) streamedChatCompaction(a *answer) {
	why := "the account streamed the conversation's summary though it was asked for one answer"
	x.t.Outcome, x.t.Error = OutcomeFailed, why
	x.emit("response.failed", x.failedEvent(0, x.madeResponseID(), "server_error", why), nil)
	x.sink().flush()
}

// keptUserMessages are the user messages of a v1 compaction's input, as output items of the
// compacted conversation: each with an id and a status, its content a list of parts (a string
// is one input_text), as the API writes a Message (the OpenResponses CompactResource).
func (x *exchange) keptUserMessages(items [][]byte) [][]byte {
	var out [][]byte
	for i, it := range items {
		if !isUserMessage(it) {
			continue
		}
		o, err := payload.Parse(it)
		if err != nil {
			continue
		}
		content, _ := o.Get("content")
		if payload.KindOf(content) == payload.KindString {
			content = []byte(`[{"type":"input_text","text":` + string(content) + `}]`)
		}
		id, ok := o.Get("id")
		if !ok || payload.KindOf(id) != payload.KindString {
			id = payload.AppendString(nil, fmt.Sprintf("msg_%s_%s_%d", runID, x.t.ID, i))
		}
		out = append(out, []byte(`{"type":"message","id":`+string(id)+`,"status":"completed","role":"user","content":`+string(content)+`}`))
	}
	return out
}
