package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/resourcesync-go/resourcesync/storage"
)

// Target is a bucket and prefix written as a mirror.
type Target struct{ b *bucket }

var _ storage.Target = (*Target)(nil)

// OpenTarget opens loc (s3://BUCKET/PREFIX) for writing with o over the
// standard AWS chain.
func OpenTarget(ctx context.Context, loc string, o Options) (*Target, error) {
	b, err := open(ctx, loc, o)
	if err != nil {
		return nil, err
	}
	return &Target{b}, nil
}

// Stat implements storage.Target.
func (t *Target) Stat(ctx context.Context, key string) (storage.Info, error) {
	return t.b.stat(ctx, key)
}

// Open implements storage.Target: the whole object, pinned to its ETag.
func (t *Target) Open(ctx context.Context, key string) (io.ReadCloser, storage.Info, error) {
	return t.b.open(ctx, key, 0, -1)
}

// List implements storage.Target. Uploads not completed are not objects:
// they are never listed.
func (t *Target) List(ctx context.Context, after string, fn func(storage.Info) error) error {
	return t.b.list(ctx, after, fn)
}

// Location implements storage.Target.
func (t *Target) Location() string { return t.b.loc }

// Close implements storage.Target.
func (t *Target) Close() error { return t.b.close() }

// Remove implements storage.Target: DeleteObject, with If-Match when
// ifVersion is given (a 412 is storage.ErrExists). A missing object is
// not an error.
func (t *Target) Remove(ctx context.Context, key, ifVersion string) error {
	if !storage.ValidKey(key) {
		return fmt.Errorf("s3: %q: %w", key, storage.ErrBadKey)
	}
	in := &s3.DeleteObjectInput{Bucket: aws.String(t.b.name), Key: aws.String(t.b.full(key))}
	if ifVersion != "" {
		in.IfMatch = etag(ifVersion)
	}
	err := t.b.do(ctx, "DELETE", key, func(ctx context.Context) error {
		_, err := t.b.client.DeleteObject(ctx, in)
		return err
	})
	if errors.Is(err, storage.ErrNotExist) && !errors.Is(err, ErrNoBucket) {
		return nil
	}
	return err
}

// CleanupUploads aborts the multipart uploads under the prefix started
// before before: what a writer killed in the middle of a large object
// left (invisible, but stored). It returns how many it aborted. Uploads
// of writers still running are younger than any sensible before.
func (t *Target) CleanupUploads(ctx context.Context, before time.Time) (int, error) {
	n := 0
	var keyMarker, idMarker *string
	for {
		var out *s3.ListMultipartUploadsOutput
		err := t.b.do(ctx, "LIST-UPLOADS", "", func(ctx context.Context) error {
			var err error
			out, err = t.b.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{
				Bucket: aws.String(t.b.name), Prefix: aws.String(t.b.prefix),
				KeyMarker: keyMarker, UploadIdMarker: idMarker,
			})
			return err
		})
		if err != nil {
			return n, err
		}
		for _, u := range out.Uploads {
			if u.Initiated == nil || !u.Initiated.Before(before) {
				continue
			}
			k := aws.ToString(u.Key)
			err := t.b.do(ctx, "ABORT-UPLOAD", k, func(ctx context.Context) error {
				_, err := t.b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
					Bucket: aws.String(t.b.name), Key: u.Key, UploadId: u.UploadId,
				})
				return err
			})
			if err != nil && !errors.Is(err, storage.ErrNotExist) {
				return n, err
			}
			n++
		}
		if !aws.ToBool(out.IsTruncated) {
			return n, nil
		}
		keyMarker, idMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// maxParts is S3's limit of parts in one upload.
const maxParts = 10000

// MaxObjectSize is the largest object S3 takes (5 TiB). A larger size
// given to Create is refused at once: the part size grows with the size
// given, and a part is buffered in memory, so a size a Source declares
// must not be able to make a writer buffer without bound.
const MaxObjectSize = 5 << 40

// Create implements storage.Target. The Writer keeps up to the part size
// in memory; a larger object becomes a multipart upload as it is written
// (ctx bounds those part uploads too).
func (t *Target) Create(ctx context.Context, key string, opt storage.PutOptions) (storage.Writer, error) {
	if !storage.ValidKey(key) {
		return nil, fmt.Errorf("s3: %q: %w", key, storage.ErrBadKey)
	}
	if opt.NoReplace && opt.IfVersion != "" {
		return nil, fmt.Errorf("s3: %s: NoReplace and IfVersion together", t.b.uri(key))
	}
	if opt.Size > MaxObjectSize {
		return nil, fmt.Errorf("s3: %s: %d bytes: S3 takes objects of %d bytes at most: %w", t.b.uri(key), opt.Size, int64(MaxObjectSize), storage.ErrRefused)
	}
	mt := opt.ModTime
	if mt.IsZero() {
		mt = time.Now()
	}
	w := &writer{t: t, ctx: ctx, key: key, opt: opt, mtime: mt, md5: md5.New(), sha: sha256.New(), partSize: t.b.partSize}
	if opt.Size > w.partSize*maxParts {
		// S3 takes 10,000 parts at most: a known size larger than that
		// many parts gets larger parts (whole MiB).
		w.partSize = (opt.Size/maxParts + 1<<20) &^ (1<<20 - 1)
	}
	if opt.Size >= 0 && opt.Size <= w.partSize {
		w.buf = make([]byte, 0, opt.Size)
	}
	return w, nil
}

// writer stages one object (see Create).
type writer struct {
	t        *Target
	ctx      context.Context
	key      string
	opt      storage.PutOptions
	partSize int64
	mtime    time.Time
	buf      []byte
	md5, sha hash.Hash // of the whole object
	n        int64
	up       *upload
	err      error // sticky: the writer failed (and aborted)
	done     bool
}

// upload is a multipart upload in progress.
type upload struct {
	id    string
	parts []types.CompletedPart
	md5s  []byte // the parts' MD5s, concatenated: the final ETag's input
}

func (w *writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.done {
		return 0, errors.New("s3: write after Commit or Abort")
	}
	w.md5.Write(p)
	w.sha.Write(p)
	w.n += int64(len(p))
	written := len(p)
	for len(p) > 0 {
		room := int(w.partSize) - len(w.buf)
		k := min(room, len(p))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if int64(len(w.buf)) >= w.partSize {
			if err := w.flushPart(w.ctx); err != nil {
				w.fail(err)
				return 0, w.err
			}
		}
	}
	return written, nil
}

func (w *writer) metadata() map[string]string {
	return map[string]string{metaMtime: formatMtime(w.mtime)}
}

func (w *writer) contentType() *string {
	if w.opt.ContentType == "" {
		return nil
	}
	return aws.String(w.opt.ContentType)
}

// flushPart sends the buffer as the next part, starting the upload first.
func (w *writer) flushPart(ctx context.Context) error {
	b := w.t.b
	if w.up == nil {
		var out *s3.CreateMultipartUploadOutput
		err := b.do(ctx, "CREATE-UPLOAD", w.key, func(ctx context.Context) error {
			var err error
			out, err = b.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
				Bucket: aws.String(b.name), Key: aws.String(b.full(w.key)),
				ContentType: w.contentType(), Metadata: w.metadata(),
			})
			return err
		})
		if err != nil {
			return err
		}
		w.up = &upload{id: aws.ToString(out.UploadId)}
	}
	num := int32(len(w.up.parts) + 1)
	if num > maxParts {
		return b.wrap("PUT-PART", w.key, fmt.Errorf("more than %d parts of %d bytes: S3 takes no more (give PutOptions.Size, or a larger part size)", maxParts, w.partSize), 0)
	}
	sum := md5.Sum(w.buf)
	sha := sha256.Sum256(w.buf)
	var tag string
	err := b.do(ctx, "PUT-PART", w.key, func(ctx context.Context) error {
		out, err := b.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: aws.String(b.name), Key: aws.String(b.full(w.key)),
			UploadId: aws.String(w.up.id), PartNumber: aws.Int32(num),
			Body: bytes.NewReader(w.buf), ContentLength: aws.Int64(int64(len(w.buf))),
			ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum[:])),
		}, payloadHash(sha[:]))
		if err != nil {
			return err
		}
		tag = version(aws.ToString(out.ETag))
		if md5Shaped(tag) && !b.etagNotMD5.Load() && tag != hex.EncodeToString(sum[:]) {
			// The server answered for other bytes than these: send the
			// part again (a part number sent twice keeps the last).
			return &apiError{status: 500, code: "BadETag", message: fmt.Sprintf("part %d answered ETag %s for bytes of MD5 %x", num, tag, sum)}
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.up.parts = append(w.up.parts, types.CompletedPart{ETag: etag(tag), PartNumber: aws.Int32(num)})
	w.up.md5s = append(w.up.md5s, sum[:]...)
	w.buf = w.buf[:0]
	return nil
}

// fail records err, aborts an upload in progress and ends the writer.
func (w *writer) fail(err error) {
	if w.err == nil {
		w.err = err
	}
	w.abortUpload()
	w.done = true
	w.buf = nil
}

func (w *writer) abortUpload() {
	if w.up == nil {
		return
	}
	b := w.t.b
	// The context may be why the writer fails: the abort gets its own
	// bounded time.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), 30*time.Second)
	defer cancel()
	id := w.up.id
	w.up = nil
	b.do(ctx, "ABORT-UPLOAD", w.key, func(ctx context.Context) error {
		_, err := b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(b.name), Key: aws.String(b.full(w.key)), UploadId: aws.String(id),
		})
		return err
	})
}

// Abort implements storage.Writer.
func (w *writer) Abort() error {
	if w.done {
		return nil
	}
	w.abortUpload()
	w.done = true
	w.buf = nil
	return nil
}

// Commit implements storage.Writer.
func (w *writer) Commit(ctx context.Context) (storage.Info, error) {
	if w.err != nil {
		return storage.Info{}, w.err
	}
	if w.done {
		return storage.Info{}, errors.New("s3: Commit after Commit or Abort")
	}
	b := w.t.b
	sum, sha := w.md5.Sum(nil), w.sha.Sum(nil)
	var mismatch string
	switch {
	case w.opt.Size >= 0 && w.n != w.opt.Size:
		mismatch = fmt.Sprintf("%d bytes written, not the %d announced", w.n, w.opt.Size)
	case w.opt.MD5 != nil && !bytes.Equal(w.opt.MD5, sum):
		mismatch = fmt.Sprintf("the bytes written have MD5 %x, not the %x given", sum, w.opt.MD5)
	case w.opt.SHA256 != nil && !bytes.Equal(w.opt.SHA256, sha):
		mismatch = fmt.Sprintf("the bytes written have SHA-256 %x, not the %x given", sha, w.opt.SHA256)
	}
	if mismatch != "" {
		err := b.wrap("PUT", w.key, fmt.Errorf("%s; nothing written: %w", mismatch, storage.ErrIntegrity), 0)
		w.fail(err)
		return storage.Info{}, err
	}
	var (
		tag, want string
		sse       bool
		err       error
	)
	if w.up == nil {
		want = hex.EncodeToString(sum)
		tag, sse, err = w.put(ctx, sum, sha)
	} else {
		if len(w.buf) > 0 {
			if err := w.flushPart(ctx); err != nil {
				w.fail(err)
				return storage.Info{}, err
			}
		}
		all := md5.Sum(w.up.md5s)
		want = hex.EncodeToString(all[:]) + "-" + strconv.Itoa(len(w.up.parts))
		tag, sse, err = w.complete(ctx)
	}
	if err != nil {
		if w.opt.IfVersion != "" && noSuchKey(err) {
			// If-Match on a key that holds nothing: the version the
			// caller knew is gone, as the storage contract says it.
			err = b.wrap("PUT", w.key, fmt.Errorf("no object holds version %s any more: %w", w.opt.IfVersion, storage.ErrExists), 0)
		}
		w.fail(err)
		return storage.Info{}, err
	}
	w.done = true
	w.buf = nil
	if !sse && !b.etagNotMD5.Load() && tag != want {
		if tag, err = w.checkStored(ctx, tag, want, sum); err != nil {
			return storage.Info{}, err
		}
	}
	return storage.Info{
		Key: w.key, Size: w.n, ModTime: w.mtime.UTC(), Version: tag,
		ContentType: w.opt.ContentType, Meta: w.metadata(),
	}, nil
}

// conditions returns the If-None-Match and If-Match of the write.
func (w *writer) conditions() (ifNone, ifMatch *string) {
	if w.opt.NoReplace {
		ifNone = aws.String("*")
	}
	if w.opt.IfVersion != "" {
		ifMatch = etag(w.opt.IfVersion)
	}
	return
}

// put sends the buffered object in one PutObject.
func (w *writer) put(ctx context.Context, sum, sha []byte) (tag string, sse bool, err error) {
	b := w.t.b
	ifNone, ifMatch := w.conditions()
	attempts := 0
	err = b.do(ctx, "PUT", w.key, func(ctx context.Context) error {
		attempts++
		out, err := b.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(b.name), Key: aws.String(b.full(w.key)),
			Body: bytes.NewReader(w.buf), ContentLength: aws.Int64(int64(len(w.buf))),
			ContentMD5:     aws.String(base64.StdEncoding.EncodeToString(sum)),
			ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(sha)),
			ContentType:    w.contentType(), Metadata: w.metadata(),
			IfNoneMatch: ifNone, IfMatch: ifMatch,
		}, payloadHash(sha))
		if err != nil {
			return err
		}
		tag = version(aws.ToString(out.ETag))
		sse = out.ServerSideEncryption == types.ServerSideEncryptionAwsKms || out.ServerSideEncryption == types.ServerSideEncryptionAwsKmsDsse || out.SSECustomerAlgorithm != nil
		return nil
	})
	if err != nil && attempts > 1 && (ifNone != nil || ifMatch != nil) && errors.Is(err, storage.ErrExists) {
		// A retry after a lost answer finds the first attempt's object:
		// ours if it holds our bytes.
		if v, ok := w.ours(ctx, hex.EncodeToString(sum)); ok {
			return v, false, nil
		}
	}
	return tag, sse, err
}

// complete ends the multipart upload.
func (w *writer) complete(ctx context.Context) (tag string, sse bool, err error) {
	b := w.t.b
	ifNone, ifMatch := w.conditions()
	attempts := 0
	err = b.do(ctx, "COMPLETE-UPLOAD", w.key, func(ctx context.Context) error {
		attempts++
		out, err := b.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket: aws.String(b.name), Key: aws.String(b.full(w.key)), UploadId: aws.String(w.up.id),
			MultipartUpload: &types.CompletedMultipartUpload{Parts: w.up.parts},
			IfNoneMatch:     ifNone, IfMatch: ifMatch,
		})
		if err != nil {
			return err
		}
		tag = version(aws.ToString(out.ETag))
		sse = out.ServerSideEncryption == types.ServerSideEncryptionAwsKms || out.ServerSideEncryption == types.ServerSideEncryptionAwsKmsDsse
		return nil
	})
	if err != nil && attempts > 1 && (errors.Is(err, storage.ErrExists) || errors.Is(err, storage.ErrNotExist)) {
		// A retry after a lost answer: the upload is gone (NoSuchUpload)
		// or the condition fails on the first attempt's object.
		all := md5.Sum(w.up.md5s)
		if v, ok := w.ours(ctx, hex.EncodeToString(all[:])+"-"+strconv.Itoa(len(w.up.parts))); ok {
			w.up = nil
			return v, false, nil
		}
	}
	if err == nil {
		w.up = nil
	}
	return tag, sse, err
}

// ours reports whether the object under the key is the one this writer
// sent (a retried conditional write whose first attempt was done): its
// ETag is want, or, on a server whose ETags are not MD5s, its bytes hash
// to the writer's MD5. It returns the object's Version.
func (w *writer) ours(ctx context.Context, want string) (string, bool) {
	in, err := w.t.b.stat(ctx, w.key)
	if err != nil || in.Size != w.n {
		return "", false
	}
	if in.Version == want {
		return want, true
	}
	if !w.t.b.etagNotMD5.Load() {
		return "", false
	}
	r, rin, err := w.t.b.open(ctx, w.key, 0, -1)
	if err != nil {
		return "", false
	}
	defer r.Close()
	h := md5.New()
	if _, err := io.Copy(h, r); err != nil || !bytes.Equal(h.Sum(nil), w.md5.Sum(nil)) {
		return "", false
	}
	return rin.Version, true
}

// checkStored is called when the write's answer named an ETag (tag)
// other than the one its bytes make (want). A HEAD that names want means
// the answer was garbled: the object is right. Otherwise the object is
// read back and hashed: the same bytes mean the server makes its ETags
// otherwise (a checksum-derived ETag): the server's ETag is the Version,
// and this bucket's ETags are not checked again. Other bytes are removed
// only if they are the object the write made (If-Match tag): another
// writer's object put there meanwhile is left alone; the commit fails.
func (w *writer) checkStored(ctx context.Context, tag, want string, sum []byte) (string, error) {
	b := w.t.b
	in, err := b.stat(ctx, w.key)
	if err == nil && in.Version == want {
		return want, nil
	}
	r, rin, err := b.open(ctx, w.key, 0, -1)
	if err != nil {
		return "", b.wrap("PUT", w.key, fmt.Errorf("the server's answer named another ETag than the bytes' %q, and the object cannot be read back: %w", want, err), 0)
	}
	h := md5.New()
	_, err = io.Copy(h, r)
	r.Close()
	if err == nil && bytes.Equal(h.Sum(nil), sum) {
		b.etagNotMD5.Store(true)
		return rin.Version, nil
	}
	msg := fmt.Sprintf("the server answered ETag %q for bytes whose ETag is %q, and holds other bytes (ETag %q)", tag, want, rin.Version)
	if err != nil {
		msg = fmt.Sprintf("the server answered ETag %q for bytes whose ETag is %q, and reading it back failed (%v)", tag, want, err)
	}
	if rin.Version != tag {
		msg += "; not the object the write made (another writer's?): left alone"
	} else if rerr := w.t.Remove(ctx, w.key, tag); rerr != nil {
		msg += fmt.Sprintf("; removing it failed: %v", rerr)
	} else {
		msg += "; the object was removed"
	}
	return "", b.wrap("PUT", w.key, errors.New(msg), 0)
}

// noSuchKey reports whether err is S3's answer for a key that holds
// nothing (not for a missing bucket or upload).
func noSuchKey(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status == 404 && ae.code != "NoSuchBucket" && ae.code != "NoSuchUpload"
}

var md5RE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// md5Shaped reports whether an ETag looks like an MD5 (as S3 makes it for
// an object PUT whole, without SSE-KMS or SSE-C).
func md5Shaped(tag string) bool { return md5RE.MatchString(tag) }

// payloadHash gives the SigV4 signer the SHA-256 of the body computed
// while buffering it, so that the bytes are not hashed a second time;
// the server checks the body against it.
func payloadHash(sha []byte) func(*s3.Options) {
	h := hex.EncodeToString(sha)
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("resourcesyncPayloadHash",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					return next.HandleFinalize(v4.SetPayloadHash(ctx, h), in)
				}), "ComputePayloadHash", middleware.Before)
		})
	}
}
