package mem

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/resourcesync-go/resourcesync/storage"
)

func init() {
	storage.Register("mem", storage.Opener{Content: func(_ context.Context, loc string, u *url.URL) (storage.Content, error) {
		s, prefix, err := parse(loc, u)
		if err != nil {
			return nil, err
		}
		return s.Content(prefix), nil
	}})
}

// parse splits "mem://NAME[/PREFIX]" into its Store and key prefix ("" or
// ending in "/").
func parse(loc string, u *url.URL) (*Store, string, error) {
	if u == nil || u.Host == "" {
		return nil, "", fmt.Errorf("mem: %q: want mem://NAME[/PREFIX]", loc)
	}
	p := strings.Trim(u.Path, "/")
	if p != "" {
		if !storage.ValidKey(p) {
			return nil, "", fmt.Errorf("mem: %q: %w: prefix %q", loc, storage.ErrBadKey, p)
		}
		p += "/"
	}
	return Open(u.Host), p, nil
}

// Content returns the Store's objects under prefix ("" for all, else a
// valid key followed by "/") as a storage.Content whose keys leave the
// prefix out.
func (s *Store) Content(prefix string) storage.Content {
	return &content{s: s, prefix: prefix}
}

type content struct {
	s      *Store
	prefix string
}

func (c *content) Location() string {
	if c.prefix == "" {
		return c.s.Location()
	}
	return c.s.Location() + "/" + strings.TrimSuffix(c.prefix, "/")
}

func (c *content) Close() error { return nil }

func (c *content) List(ctx context.Context, after string, fn func(storage.Info) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		page := c.s.page(c.prefix, after)
		for _, inf := range page {
			if err := fn(inf); err != nil {
				return err
			}
		}
		if len(page) < pageSize {
			return nil
		}
		after = page[len(page)-1].Key
	}
}

func (c *content) get(key string) (*object, error) {
	if !storage.ValidKey(key) {
		return nil, fmt.Errorf("mem: %w: %q", storage.ErrBadKey, key)
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	ob, ok := c.s.objs[c.prefix+key]
	if !ok {
		return nil, fmt.Errorf("mem: %s: %w", key, storage.ErrNotExist)
	}
	return ob, nil
}

func (c *content) Stat(ctx context.Context, key string) (storage.Info, error) {
	ob, err := c.get(key)
	if err != nil {
		return storage.Info{}, err
	}
	return ob.info(key), nil
}

func (c *content) Open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, storage.Info, error) {
	ob, err := c.get(key)
	if err != nil {
		return nil, storage.Info{}, err
	}
	c.s.mu.Lock()
	c.s.opens++
	c.s.mu.Unlock()
	n := int64(len(ob.data))
	offset = min(max(offset, 0), n)
	end := n
	if length >= 0 {
		end = min(offset+length, n)
	}
	// The object's bytes are never changed in place: the reader holds
	// the version it opened, whatever Puts follow.
	return io.NopCloser(bytes.NewReader(ob.data[offset:end])), ob.info(key), nil
}
