package proxy

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Instance authentication: the programs of the relay's own settings folder (the command line,
// the windows of another process) talk to the running relay without ever sending it a secret.
// The relay's embedder gives it a secret (SetInstanceSecret) that it also writes, readable by
// its user alone, beside its instance lock; a program that read it signs each request with it
// (SignInstanceRequest), and the relay signs its answer back (CheckInstanceProof), so that
//
//   - a program listening on the relay's port in its place (another user's, after the relay
//     stopped or moved) receives nothing it can use, neither the local key nor a signature it
//     can replay to the relay, and its forged answers are refused;
//   - a signed request needs no local key, and the route that spends money (redeem-credit)
//     needs a signature or the local key even while the key is off.
//
// A signature covers a timestamp, a random nonce, the method and the request URI; the relay
// accepts each nonce once, within instanceSkew of its clock.
const (
	// InstanceAuthHeader carries a request's signature: "UNIXMS.NONCE.MAC".
	InstanceAuthHeader = "X-Codexrelay-Instance"
	// InstanceProofHeader carries the relay's signature of its answer to a signed request.
	InstanceProofHeader = "X-Codexrelay-Proof"
	// instanceSkew is how far a signature's time may be from the relay's clock.
	instanceSkew = 2 * time.Minute
	// instanceNonces bounds the nonces remembered within instanceSkew.
	instanceNonces = 8192
)

// SetInstanceSecret sets the secret that signed requests prove they know ("" accepts none).
func (s *Server) SetInstanceSecret(secret string) {
	s.instance.mu.Lock()
	defer s.instance.mu.Unlock()
	s.instance.secret = []byte(secret)
	s.instance.seen = nil
}

// instanceAuth holds the instance secret and the nonces seen.
type instanceAuth struct {
	mu     sync.Mutex
	secret []byte
	seen   map[string]time.Time // nonce -> when it may be forgotten
}

// instanceMAC is the signature of a request (parts[0] "request") or of an answer ("answer").
func instanceMAC(secret []byte, parts ...string) string {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte("codexrelay-instance\n" + strings.Join(parts, "\n")))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// SignInstanceRequest signs req with the instance secret and returns the nonce its answer's
// proof names (CheckInstanceProof).
func SignInstanceRequest(req *http.Request, secret string, now time.Time) (nonce string) {
	var b [16]byte
	rand.Read(b[:])
	nonce = base64.RawURLEncoding.EncodeToString(b[:])
	ts := strconv.FormatInt(now.UnixMilli(), 10)
	req.Header.Set(InstanceAuthHeader, ts+"."+nonce+"."+instanceMAC([]byte(secret), "request", ts, nonce, req.Method, req.URL.RequestURI()))
	return nonce
}

// CheckInstanceProof reports whether resp is the relay's answer to the request signed with
// nonce: only the holder of the secret can sign it.
func CheckInstanceProof(resp *http.Response, secret, nonce string) bool {
	want := instanceMAC([]byte(secret), "answer", nonce)
	return hmac.Equal([]byte(resp.Header.Get(InstanceProofHeader)), []byte(want))
}

// verify checks r's signature. present says there is one; ok that it is valid and new, and
// then nonce is what the answer's proof names.
func (ia *instanceAuth) verify(r *http.Request, now time.Time) (present, ok bool, nonce string) {
	v := r.Header.Get(InstanceAuthHeader)
	if v == "" {
		return false, false, ""
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 || len(v) > 256 {
		return true, false, ""
	}
	ms, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return true, false, ""
	}
	if d := now.Sub(time.UnixMilli(ms)); d > instanceSkew || d < -instanceSkew {
		return true, false, ""
	}
	ia.mu.Lock()
	defer ia.mu.Unlock()
	if len(ia.secret) == 0 {
		return true, false, ""
	}
	want := instanceMAC(ia.secret, "request", parts[0], parts[1], r.Method, r.URL.RequestURI())
	if !hmac.Equal([]byte(parts[2]), []byte(want)) {
		return true, false, ""
	}
	if _, replayed := ia.seen[parts[1]]; replayed {
		return true, false, ""
	}
	if ia.seen == nil {
		ia.seen = map[string]time.Time{}
	}
	if len(ia.seen) >= instanceNonces {
		for n, until := range ia.seen {
			if now.After(until) {
				delete(ia.seen, n)
			}
		}
		if len(ia.seen) >= instanceNonces {
			return true, false, "" // more signed requests in the window than any program sends
		}
	}
	ia.seen[parts[1]] = now.Add(2 * instanceSkew)
	return true, true, parts[1]
}

// signedKey marks a request's context as signed with the instance secret.
type signedKey struct{}

// InstanceSigned says whether r was signed with the instance secret (ServeHTTP checked it):
// for the local API's routes (Options.LocalAPI), which trust such a request more.
func InstanceSigned(r *http.Request) bool { return r.Context().Value(signedKey{}) != nil }

// admitSigned checks r's instance signature. A request without one is returned as it is; a
// valid one is marked signed and its answer carries the proof (set before any handler writes);
// an invalid one is refused.
func (s *Server) admitSigned(w http.ResponseWriter, r *http.Request) (*http.Request, *apiError) {
	present, ok, nonce := s.instance.verify(r, s.now())
	switch {
	case !present:
		return r, nil
	case !ok:
		return r, &apiError{Status: http.StatusUnauthorized, Type: "invalid_request_error", Code: "invalid_instance_signature",
			Message: "the request's instance signature is not valid, too old or replayed: only the programs of this relay's settings folder sign requests"}
	}
	s.instance.mu.Lock()
	w.Header().Set(InstanceProofHeader, instanceMAC(s.instance.secret, "answer", nonce))
	s.instance.mu.Unlock()
	return r.WithContext(context.WithValue(r.Context(), signedKey{}, true)), nil
}
