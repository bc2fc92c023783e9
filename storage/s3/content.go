package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/storage"
)

// Content is a bucket and prefix read as a Source's collection.
type Content struct{ b *bucket }

var _ storage.Content = (*Content)(nil)

// OpenContent opens loc (s3://BUCKET/PREFIX) for reading with o over the
// standard AWS chain.
func OpenContent(ctx context.Context, loc string, o Options) (*Content, error) {
	b, err := open(ctx, loc, o)
	if err != nil {
		return nil, err
	}
	return &Content{b}, nil
}

// List implements storage.Content.
func (c *Content) List(ctx context.Context, after string, fn func(storage.Info) error) error {
	return c.b.list(ctx, after, fn)
}

// Stat implements storage.Content.
func (c *Content) Stat(ctx context.Context, key string) (storage.Info, error) {
	return c.b.stat(ctx, key)
}

// Open implements storage.Content.
func (c *Content) Open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, storage.Info, error) {
	return c.b.open(ctx, key, offset, length)
}

// Location implements storage.Content.
func (c *Content) Location() string { return c.b.loc }

// Close implements storage.Content.
func (c *Content) Close() error { return c.b.close() }

// listPage is the number of keys a ListObjectsV2 page asks for.
const listPage = 1000

// maxEmptyPages is the number of truncated pages in a row without a key
// after which a listing is taken for one that never ends.
const maxEmptyPages = 1000

// listed is a page of a listing, or the error that ends it.
type listed struct {
	out *s3.ListObjectsV2Output
	err error
}

// list hands out the keys page by page while the next page is being
// fetched: the caller's work on a page and the server's on the next
// overlap, and at most two pages are held.
func (b *bucket) list(ctx context.Context, after string, fn func(storage.Info) error) error {
	start := ""
	if after != "" {
		start = b.full(after)
	}
	ctx, cancel := context.WithCancel(ctx)
	pages := make(chan listed, 1)
	go b.pages(ctx, start, pages)
	defer func() {
		cancel()
		for range pages { // the fetcher ends before List returns
		}
	}()
	last := start
	for pg := range pages {
		if pg.err != nil {
			return pg.err
		}
		out := pg.out
		for _, o := range out.Contents {
			full := aws.ToString(o.Key)
			if out.EncodingType == types.EncodingTypeUrl {
				// A server that does not encode does not say it does.
				var err error
				if full, err = url.QueryUnescape(full); err != nil {
					return b.wrap("LIST", "", fmt.Errorf("the server listed the URL-encoded key %q: %w", aws.ToString(o.Key), err), 0)
				}
			}
			if full <= last {
				return b.wrap("LIST", "", fmt.Errorf("the server listed %q after %q: not in byte order", full, last), 0)
			}
			last = full
			key, ok := strings.CutPrefix(full, b.prefix)
			if !ok || !storage.ValidKey(key) {
				continue // a folder marker "dir/", or a key no storage can hold
			}
			if err := fn(storage.Info{
				Key:     key,
				Size:    aws.ToInt64(o.Size),
				ModTime: aws.ToTime(o.LastModified),
				Version: version(aws.ToString(o.ETag)),
			}); err != nil {
				return err
			}
		}
	}
	// The fetcher stops without a word when ctx ends: a listing cut
	// short must not read as a complete one.
	return ctx.Err()
}

// pages fetches the pages of a listing after start into ch, which it
// closes; it stops at the first error (sent) or when ctx ends.
func (b *bucket) pages(ctx context.Context, start string, ch chan<- listed) {
	defer close(ch)
	send := func(pg listed) bool {
		select {
		case ch <- pg:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var token *string
	empty := 0 // truncated pages in a row without a key
	for {
		in := &s3.ListObjectsV2Input{
			Bucket:            aws.String(b.name),
			Prefix:            aws.String(b.prefix),
			MaxKeys:           aws.Int32(listPage),
			ContinuationToken: token,
			// A key may hold any character, but XML 1.0 cannot carry a
			// control character: one such object would make every
			// listing undecodable (aws-sdk-go#1914). URL-encoded keys
			// always decode.
			EncodingType: types.EncodingTypeUrl,
		}
		if token == nil && start != "" {
			in.StartAfter = aws.String(start)
		}
		var out *s3.ListObjectsV2Output
		err := b.do(ctx, "LIST", "", func(ctx context.Context) error {
			var err error
			out, err = b.client.ListObjectsV2(ctx, in)
			return err
		})
		if !send(listed{out: out, err: err}) || err != nil || !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
			return
		}
		// A listing whose pages bring no key and hand back the token
		// they were asked with, or a new one for ever, would never end
		// (the byte-order check catches one that repeats keys). Empty
		// truncated pages happen (many keys removed), not maxEmptyPages
		// in a row.
		if len(out.Contents) > 0 {
			empty = 0
		} else if empty++; empty >= maxEmptyPages || (token != nil && *out.NextContinuationToken == *token) {
			send(listed{err: b.wrap("LIST", "", fmt.Errorf("the server's listing does not end: %d pages in a row without a key, continuation token %q", empty, *out.NextContinuationToken), 0)})
			return
		}
		token = out.NextContinuationToken
	}
}

// version is an ETag as a storage Version: without its quotes (listings
// and HEAD answers do not always agree on them).
func version(etag string) string { return strings.Trim(etag, `"`) }

// etag is a Version as an If-Match value.
func etag(v string) *string { return aws.String(`"` + v + `"`) }

// metaMtime is the metadata name of the modification time, as rclone
// keeps it.
const metaMtime = "mtime"

// formatMtime writes t as rclone does: seconds.nanoseconds.
func formatMtime(t time.Time) string {
	sec, ns := t.Unix(), t.Nanosecond()
	if sec < 0 && ns > 0 {
		return fmt.Sprintf("-%d.%09d", -(sec + 1), 1e9-ns)
	}
	return fmt.Sprintf("%d.%09d", sec, ns)
}

// parseMtime reads seconds[.fraction] (rclone's "mtime"); ok false when s
// is not one.
func parseMtime(s string) (time.Time, bool) {
	sec, frac, hasFrac := strings.Cut(strings.TrimSpace(s), ".")
	if sec == "" || len(sec) > 12 {
		return time.Time{}, false
	}
	neg := strings.HasPrefix(sec, "-")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	var ns int64
	if hasFrac {
		if frac == "" || len(frac) > 9 {
			if len(frac) > 9 {
				frac = frac[:9]
			} else {
				return time.Time{}, false
			}
		}
		for _, c := range frac {
			if c < '0' || c > '9' {
				return time.Time{}, false
			}
		}
		ns, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		if neg {
			ns = -ns
		}
	}
	t := time.Unix(n, ns).UTC()
	if y := t.Year(); y < 1 || y > 9999 {
		// Any writer sets "mtime"; a lastmod is a W3C datetime (YYYY).
		return time.Time{}, false
	}
	return t, true
}

// infoOf makes an Info from a HEAD or GET answer's fields.
func infoOf(key string, size int64, lastMod *time.Time, tag, ctype *string, meta map[string]string) storage.Info {
	in := storage.Info{
		Key: key, Size: size, ModTime: aws.ToTime(lastMod), Version: version(aws.ToString(tag)),
		ContentType: aws.ToString(ctype),
	}
	if len(meta) > 0 {
		in.Meta = make(map[string]string, len(meta))
		for k, v := range meta {
			in.Meta[strings.ToLower(k)] = v
		}
		if t, ok := parseMtime(in.Meta[metaMtime]); ok {
			in.ModTime = t
		}
	}
	return in
}

func (b *bucket) stat(ctx context.Context, key string) (storage.Info, error) {
	if !storage.ValidKey(key) {
		return storage.Info{}, fmt.Errorf("s3: %q: %w", key, storage.ErrBadKey)
	}
	var out *s3.HeadObjectOutput
	err := b.do(ctx, "HEAD", key, func(ctx context.Context) error {
		var err error
		out, err = b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.name), Key: aws.String(b.full(key))})
		return err
	})
	if err != nil {
		return storage.Info{}, err
	}
	return infoOf(key, aws.ToInt64(out.ContentLength), out.LastModified, out.ETag, out.ContentType, out.Metadata), nil
}

// open starts a read of length bytes from offset (length < 0: to the end)
// and returns a reader that resumes a cut read pinned to the ETag.
func (b *bucket) open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, storage.Info, error) {
	if !storage.ValidKey(key) {
		return nil, storage.Info{}, fmt.Errorf("s3: %q: %w", key, storage.ErrBadKey)
	}
	if offset < 0 {
		return nil, storage.Info{}, fmt.Errorf("s3: %s: negative offset %d", b.uri(key), offset)
	}
	if length != 0 && offset == 0 {
		r := &reader{b: b, ctx: ctx, key: key, off: 0, end: -1}
		if length > 0 {
			r.end = length
		}
		err := r.first()
		if err == nil {
			return r, r.info, nil
		}
		var ae *apiError
		if !errors.As(err, &ae) || ae.status != http.StatusRequestedRangeNotSatisfiable {
			return nil, storage.Info{}, err
		}
		// A range of an empty object: S3 answers 416.
	}
	// A Range past the end is an error (416) to S3: the size decides
	// first.
	in, err := b.stat(ctx, key)
	if err != nil {
		return nil, storage.Info{}, err
	}
	if offset >= in.Size || length == 0 {
		return io.NopCloser(strings.NewReader("")), in, nil
	}
	if length < 0 || offset+length > in.Size {
		length = in.Size - offset
	}
	r := &reader{b: b, ctx: ctx, key: key, off: offset, end: offset + length, info: in, pinned: true}
	if err := r.first(); err != nil {
		return nil, storage.Info{}, err
	}
	return r, r.info, nil
}

// reader reads an object's range; a body cut short (reset, truncated) is
// reopened where it stopped with If-Match the ETag of the first answer.
type reader struct {
	b        *bucket
	ctx      context.Context
	key      string
	off, end int64 // end exclusive; -1: to the end of the object
	info     storage.Info
	pinned   bool // info.Version is the ETag every answer must have
	body     io.ReadCloser
	closed   bool
}

// get opens the body at r.off.
func (r *reader) get(ctx context.Context) error {
	in := &s3.GetObjectInput{Bucket: aws.String(r.b.name), Key: aws.String(r.b.full(r.key))}
	if r.off > 0 || r.end >= 0 {
		rg := fmt.Sprintf("bytes=%d-", r.off)
		if r.end >= 0 {
			rg += strconv.FormatInt(r.end-1, 10)
		}
		in.Range = aws.String(rg)
	}
	if r.pinned {
		in.IfMatch = etag(r.info.Version)
	}
	out, err := r.b.client.GetObject(ctx, in)
	if err != nil {
		var ae *apiError
		if _, cerr := classify(err); errors.As(cerr, &ae) && ae.status == 412 && r.pinned {
			return retry.Permanent(ErrChanged)
		}
		return err
	}
	if r.pinned && version(aws.ToString(out.ETag)) != r.info.Version {
		out.Body.Close()
		return retry.Permanent(fmt.Errorf("%w (ETag %s, first read %s)", ErrChanged, version(aws.ToString(out.ETag)), r.info.Version))
	}
	if r.off > 0 && !strings.HasPrefix(aws.ToString(out.ContentRange), "bytes "+strconv.FormatInt(r.off, 10)+"-") {
		// A server (or a proxy) that ignores Range answers with the
		// object from its first byte: those are not the bytes at r.off.
		out.Body.Close()
		return retry.Permanent(fmt.Errorf("asked for the bytes from %d, the server answered Content-Range %q", r.off, aws.ToString(out.ContentRange)))
	}
	if !r.pinned {
		size := aws.ToInt64(out.ContentLength)
		if cr := aws.ToString(out.ContentRange); cr != "" {
			if _, total, ok := strings.Cut(cr, "/"); ok {
				if n, err := strconv.ParseInt(total, 10, 64); err == nil {
					size = n
				}
			}
		}
		if out.ContentLength == nil && aws.ToString(out.ContentRange) == "" {
			// Chunked (a proxy's doing): the answer does not say how
			// long the object is, which a HEAD of the same ETag does.
			in, err := r.b.stat(ctx, r.key)
			if err != nil {
				out.Body.Close()
				return retry.Permanent(err)
			}
			if in.Version != version(aws.ToString(out.ETag)) {
				out.Body.Close()
				return fmt.Errorf("%w (a GET without Content-Length of ETag %s, a HEAD of %s)", ErrChanged, version(aws.ToString(out.ETag)), in.Version)
			}
			size = in.Size
		}
		r.info = infoOf(r.key, size, out.LastModified, out.ETag, out.ContentType, out.Metadata)
		r.pinned = true
		if r.end < 0 || r.end > size {
			r.end = size
		}
	}
	r.body = out.Body
	return nil
}

func (r *reader) first() error {
	return r.b.do(r.ctx, "GET", r.key, func(ctx context.Context) error {
		if err := r.get(ctx); err != nil {
			return err
		}
		return nil
	})
}

// Read reads from the body, reopening it (under the retry policy) when a
// read fails before the end.
func (r *reader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, errors.New("s3: read of a closed object")
	}
	if r.off >= r.end {
		return 0, io.EOF
	}
	if int64(len(p)) > r.end-r.off {
		p = p[:r.end-r.off]
	}
	var n int
	err := r.b.do(r.ctx, "GET", r.key, func(ctx context.Context) error {
		if r.body == nil {
			if err := r.get(ctx); err != nil {
				return err
			}
		}
		m, err := r.body.Read(p)
		n = m
		r.off += int64(m)
		if err == io.EOF && r.off < r.end {
			err = io.ErrUnexpectedEOF
		}
		if err == io.EOF || err == nil {
			return nil
		}
		r.body.Close()
		r.body = nil
		if m > 0 {
			return nil // progress: the next Read reopens
		}
		return err
	})
	if err != nil {
		return n, err
	}
	if n == 0 && r.off >= r.end {
		return 0, io.EOF
	}
	return n, nil
}

func (r *reader) Close() error {
	r.closed = true
	if r.body != nil {
		err := r.body.Close()
		r.body = nil
		return err
	}
	return nil
}
