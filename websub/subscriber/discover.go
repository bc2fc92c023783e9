package subscriber

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/internal/linkheader"
	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/rs"
)

// ErrNoHub is matched by Discover's error when the topic advertises no hub
// or no self URL; ErrManySelf when it advertises more than one self.
var (
	ErrNoHub    = errors.New("subscriber: no rel=hub and rel=self advertised")
	ErrManySelf = errors.New("subscriber: more than one rel=self advertised")
)

// maxDiscoveryBody is how much of a topic's body Discover reads.
const maxDiscoveryBody = 1 << 20

// Discovery is what a topic URL advertises.
type Discovery struct {
	URL   string   // the URL fetched last (after redirects)
	Topic string   // rel=self: the URL to subscribe to (WS-DISC-6)
	Hubs  []string // rel=hub, in order, without repeats
}

// Discover fetches topicURL (following redirects) and returns its rel=self
// and rel=hub URLs (WS-DISC-4..7): from the HTTP Link headers first, and
// only for what they lack from the body's <link> elements (HTML head, Atom
// feed, RSS atom:link). Relative references resolve against the final URL.
//
// Errors have the credentials of their URLs redacted (internal/redact),
// so that a program logging them leaks nothing; errors.Is and errors.As
// see through.
func Discover(ctx context.Context, c *http.Client, topicURL string) (*Discovery, error) {
	d, err := discover(ctx, c, topicURL)
	return d, redact.Error(err)
}

func discover(ctx context.Context, c *http.Client, topicURL string) (*Discovery, error) {
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, topicURL, nil)
	if err != nil {
		return nil, fmt.Errorf("subscriber: %w", err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "application/xml, application/atom+xml, application/rss+xml, text/html;q=0.9, */*;q=0.5")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("subscriber: discovery: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("subscriber: discovery: %w", &httperr.StatusError{URL: redact.String(topicURL), Code: resp.StatusCode})
	}
	base := resp.Request.URL
	d := &Discovery{URL: base.String()}
	var selves []string
	for _, l := range linkheader.Parse(nil, resp.Header.Values("Link")) {
		href := resolveRef(base, l.Target)
		if href == "" {
			continue
		}
		if l.HasRel("hub") {
			d.Hubs = appendNew(d.Hubs, href)
		}
		if l.HasRel("self") {
			selves = appendNew(selves, href)
		}
	}
	if len(d.Hubs) == 0 || len(selves) == 0 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxDiscoveryBody))
		hubs, bself := BodyLinks(body, resp.Header.Get("Content-Type"), base)
		if len(d.Hubs) == 0 {
			d.Hubs = hubs
		}
		if len(selves) == 0 {
			selves = bself
		}
	}
	switch {
	case len(selves) > 1:
		return d, fmt.Errorf("%w: %s", ErrManySelf, strings.Join(selves, ", "))
	case len(selves) == 0 || len(d.Hubs) == 0:
		return d, ErrNoHub
	}
	d.Topic = selves[0]
	return d, nil
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

const atomNS = "http://www.w3.org/2005/Atom"

// BodyLinks returns the hub and self links of a topic's body: <link>
// elements in the head of an HTML page (never in its body: WS-DISC-3), or
// Atom link elements of a feed (Atom feed, RSS channel) before its first
// entry or item. contentType picks the reader (html, else xml).
func BodyLinks(body []byte, contentType string, base *url.URL) (hubs, selves []string) {
	isHTML := strings.Contains(strings.ToLower(contentType), "html")
	if !isHTML && !strings.Contains(strings.ToLower(contentType), "xml") {
		return nil, nil
	}
	if len(body) > maxDiscoveryBody {
		body = body[:maxDiscoveryBody]
	}
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = false
	if isHTML {
		dec.AutoClose = xml.HTMLAutoClose
		dec.Entity = xml.HTMLEntity
	}
	for n := 0; n < 100000; n++ {
		tok, err := dec.RawToken()
		if err != nil {
			break
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		name := strings.ToLower(se.Name.Local)
		if name == "body" && isHTML || !isHTML && (name == "entry" || name == "item") {
			break
		}
		if name != "link" {
			continue
		}
		// RawToken leaves prefixes unresolved: in RSS the element is
		// atom:link; in Atom it is the default namespace. An HTML link or
		// an unprefixed feed link both have Space "".
		if !isHTML && se.Name.Space != "" && !strings.EqualFold(se.Name.Space, "atom") {
			continue
		}
		var rel, href string
		for _, a := range se.Attr {
			switch strings.ToLower(a.Name.Local) {
			case "rel":
				if a.Name.Space == "" {
					rel = a.Value
				}
			case "href":
				if a.Name.Space == "" {
					href = a.Value
				}
			}
		}
		if href == "" {
			continue
		}
		u := resolveRef(base, href)
		if u == "" {
			continue
		}
		for _, r := range strings.Fields(rel) {
			switch strings.ToLower(r) {
			case "hub":
				hubs = appendNew(hubs, u)
			case "self":
				selves = appendNew(selves, u)
			}
		}
	}
	return hubs, selves
}

// resolveRef resolves ref against base into an absolute http(s) URL
// without fragment, or "".
func resolveRef(base *url.URL, ref string) string {
	u, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		return ""
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// Channel is a notification channel advertised in a Capability List
// (RS-WS-7): an item whose capability is change-notification or
// framework-notification, with loc = topic and rs:ln rel="hub".
type Channel struct {
	Capability rs.Capability
	Topic      string
	Hub        string
}

// Channels returns the notification channels among a Capability List's
// entries; items without a hub link are left out.
func Channels(entries []rs.Entry) []Channel {
	var out []Channel
	for i := range entries {
		e := &entries[i]
		c := e.MD.Capability
		if c != rs.CapChangeNotification && c != rs.CapFrameworkNotification {
			continue
		}
		hub := e.Link(rs.RelHub)
		if e.Loc == "" || hub == "" {
			continue
		}
		out = append(out, Channel{Capability: c, Topic: e.Loc, Hub: hub})
	}
	return out
}
