package destination

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/resourcesync-go/resourcesync/rs"
)

// doc is an open ResourceSync document: its head, then its entries.
type doc struct {
	URL  string
	Head *rs.Head
	dec  *rs.Decoder
	body io.Closer
}

// next returns the next entry, or io.EOF.
func (d *doc) next() (*rs.Entry, error) { return d.dec.Next() }

func (d *doc) Close() error { return d.body.Close() }

// TEMPORARY: replaced by the discover package.
func (e *engine) open(ctx context.Context, u string) (*doc, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := e.opt.Client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	dec := rs.NewDecoder(resp.Body)
	h, err := dec.Head()
	if err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	return &doc{URL: resp.Request.URL.String(), Head: h, dec: dec, body: resp.Body}, nil
}
