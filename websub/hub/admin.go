package hub

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// AdminHandler serves the dead-letter store behind a bearer token (it
// refuses everything when token is empty):
//
//	GET  .../dead-letters       JSON list (bodies omitted unless ?body=1)
//	POST .../replay?id=N        deliver dead letter N again; 200 when delivered
//	GET  .../stats              JSON Stats
func (h *Hub) AdminHandler(token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if token == "" || !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hub admin"`)
			httpError(w, http.StatusUnauthorized, "admin requires the admin bearer token")
			return
		}
		switch p := r.URL.Path; {
		case strings.HasSuffix(p, "/dead-letters") && r.Method == http.MethodGet:
			dl, err := h.DeadLetters(r.Context())
			if err != nil {
				httpError(w, http.StatusInternalServerError, err.Error())
				return
			}
			if r.URL.Query().Get("body") != "1" {
				for i := range dl {
					dl[i].Body = nil
				}
			}
			writeJSON(w, dl)
		case strings.HasSuffix(p, "/replay") && r.Method == http.MethodPost:
			id, err := strconv.ParseUint(r.URL.Query().Get("id"), 10, 64)
			if err != nil {
				httpError(w, http.StatusBadRequest, "replay needs ?id=N")
				return
			}
			if err := h.Replay(r.Context(), id); err != nil {
				code := http.StatusBadGateway
				if errors.Is(err, ErrNoSubscription) {
					code = http.StatusConflict
				}
				httpError(w, code, err.Error())
				return
			}
			writeJSON(w, map[string]any{"replayed": id})
		case strings.HasSuffix(p, "/stats") && r.Method == http.MethodGet:
			writeJSON(w, h.Stats())
		default:
			httpError(w, http.StatusNotFound, "unknown admin request")
		}
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
