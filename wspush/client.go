package wspush

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/coder/websocket"

	"github.com/resourcesync-go/resourcesync/feed/activity"
	"github.com/resourcesync-go/resourcesync/httperr"
)

// MaxFrame bounds one frame a Receiver reads: an activity is a few
// hundred bytes; a larger frame ends the connection.
const MaxFrame = 64 << 10

// Subscribe asks the subscription endpoint for a channel on topic and
// returns its description. client carries the credentials (it is the
// client that reads the Source's documents).
func Subscribe(ctx context.Context, client *http.Client, endpoint, topic string) (*Description, error) {
	body, _ := json.Marshal(map[string]any{"@context": []string{NotificationContext}, "type": ChannelType, "topic": topic})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("Accept", ContentType)
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("wspush: subscribe at %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRequest+1))
	if err != nil {
		return nil, fmt.Errorf("wspush: subscribe at %s: %w", endpoint, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("wspush: subscribe: %w", &httperr.StatusError{Method: http.MethodPost, URL: endpoint, Code: resp.StatusCode, Body: string(bytes.TrimSpace(b))})
	}
	if len(b) > maxRequest {
		return nil, fmt.Errorf("wspush: subscribe at %s: channel description too large", endpoint)
	}
	var d Description
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("wspush: subscribe at %s: channel description: %w", endpoint, err)
	}
	if !channelType(d.Type) {
		return nil, fmt.Errorf("wspush: subscribe at %s: channel type %q, want %s", endpoint, d.Type, ChannelTypeShort)
	}
	if err := sameAuthority(endpoint, d.ReceiveFrom); err != nil {
		return nil, fmt.Errorf("wspush: subscribe at %s: %w", endpoint, err)
	}
	return &d, nil
}

// sameAuthority refuses a receiveFrom on another host than the
// subscription endpoint, or not ws(s): the channel is the Source's own,
// and a redirect of the push elsewhere would be a way to make the mirror
// dial anything.
func sameAuthority(endpoint, receiveFrom string) error {
	e, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	r, err := url.Parse(receiveFrom)
	if err != nil {
		return fmt.Errorf("receiveFrom %q: %w", receiveFrom, err)
	}
	want := map[string]string{"http": "ws", "https": "wss"}[e.Scheme]
	if r.Scheme != want || !strings.EqualFold(r.Host, e.Host) {
		return fmt.Errorf("receiveFrom %q is not a %s URL on %s", receiveFrom, want, e.Host)
	}
	return nil
}

// Receiver is an open channel.
type Receiver struct {
	ws *websocket.Conn
}

// Dial opens the channel at receiveFrom. client is used for the
// handshake (its transport; its redirects are not followed).
func Dial(ctx context.Context, client *http.Client, receiveFrom string) (*Receiver, error) {
	opts := &websocket.DialOptions{}
	if client != nil {
		c := *client
		c.Timeout = 0 // the connection lives long; ctx bounds the handshake
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		opts.HTTPClient = &c
	}
	ws, resp, err := websocket.Dial(ctx, receiveFrom, opts)
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, fmt.Errorf("wspush: connect: %w", &httperr.StatusError{Method: http.MethodGet, URL: redactToken(receiveFrom), Code: resp.StatusCode})
		}
		return nil, fmt.Errorf("wspush: connect to %s: %w", redactToken(receiveFrom), err)
	}
	ws.SetReadLimit(MaxFrame)
	return &Receiver{ws: ws}, nil
}

// redactToken hides the token of a receiveFrom URL in messages.
func redactToken(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(a receiveFrom URL)"
	}
	if u.RawQuery != "" {
		u.RawQuery = "token=REDACTED"
	}
	return u.String()
}

// ErrBadFrame wraps a frame that is not an activity: the caller drops the
// connection and catches up, since the stream can no longer be trusted to
// be complete.
var ErrBadFrame = errors.New("wspush: frame is not an activity")

// Next returns the next activity. It fails when the connection ends, on a
// binary or oversized frame, and on one that is not a JSON activity.
func (r *Receiver) Next(ctx context.Context) (*activity.Activity, error) {
	typ, b, err := r.ws.Read(ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, fmt.Errorf("%w: binary frame", ErrBadFrame)
	}
	return parseActivity(b)
}

// parseActivity reads one frame's activity.
func parseActivity(b []byte) (*activity.Activity, error) {
	var a activity.Activity
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFrame, err)
	}
	if a.Type == "" {
		return nil, fmt.Errorf("%w: no type", ErrBadFrame)
	}
	return &a, nil
}

// Close ends the connection.
func (r *Receiver) Close() error { return r.ws.Close(websocket.StatusNormalClosure, "") }
