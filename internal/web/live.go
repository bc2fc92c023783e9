package web

import (
	"crypto/sha256"
	"encoding/base64"
	"html"
	"net/http"
)

// liveScript is the one script of the views: the live page must open a
// WebSocket, which plain HTML cannot. It subscribes (the Solid
// WebSocketChannel2023 handshake: POST the topic, get receiveFrom), then
// lists each activity received, newest first, at most 500. It builds the
// list with textContent only: nothing received is ever parsed as HTML.
const liveScript = `(async () => {
  const m = document.getElementById('live');
  const state = document.getElementById('state');
  const list = document.getElementById('changes');
  try {
    const r = await fetch(m.dataset.subscribe, {method: 'POST', credentials: 'same-origin',
      headers: {'Content-Type': 'application/ld+json'},
      body: JSON.stringify({'@context': ['https://www.w3.org/ns/solid/notification/v1'],
        type: 'WebSocketChannel2023', topic: m.dataset.topic})});
    if (!r.ok) { state.textContent = 'subscription refused: HTTP ' + r.status; return; }
    const d = await r.json();
    const ws = new WebSocket(d.receiveFrom);
    ws.onopen = () => { state.textContent = 'live: changes appear here as they happen'; };
    ws.onclose = (e) => { state.textContent = 'disconnected (' + e.code + '): reload the page to reconnect'; };
    ws.onmessage = (ev) => {
      const a = JSON.parse(ev.data);
      const li = document.createElement('li');
      li.className = 'change';
      li.textContent = a.type + ' ' + (a.object ? a.object.id : '') + ' at ' + a.endTime;
      list.prepend(li);
      while (list.children.length > 500) list.lastChild.remove();
    };
  } catch (e) { state.textContent = 'error: ' + e; }
})();`

func scriptHash() string {
	sum := sha256.Sum256([]byte(liveScript))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// LiveHandler serves the page that shows a Source's changes live: it
// subscribes at subscribe to topic and lists the activities. Its CSP is
// CSP's plus the one script (by hash) and connections to its own origin
// (the subscription and the WebSocket).
func LiveHandler(subscribe, topic string) http.Handler {
	page := `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
		`<meta name="viewport" content="width=device-width, initial-scale=1">` +
		`<title>Live changes</title><style>` + Style + `</style></head><body>` +
		`<main id="live" data-subscribe="` + html.EscapeString(subscribe) + `" data-topic="` + html.EscapeString(topic) + `">` +
		`<h1>Live changes</h1><p>Changes to <a href="` + html.EscapeString(topic) + `">` + html.EscapeString(topic) +
		`</a>, pushed over WebSocket as Activity Streams activities.</p>` +
		`<p id="state">connecting…</p><ol id="changes" reversed></ol></main>` +
		`<script>` + liveScript + `</script></body></html>`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		SetHeaders(w.Header())
		// ws: and wss: on this host, named: 'self' covers them only in
		// browsers that implement CSP 3's rule.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src '"+styleHash()+"'; script-src '"+scriptHash()+
			"'; connect-src 'self' ws://"+r.Host+" wss://"+r.Host+"; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		w.Header().Set("Cache-Control", "no-cache")
		if r.Method == http.MethodGet {
			w.Write([]byte(page))
		}
	})
}
