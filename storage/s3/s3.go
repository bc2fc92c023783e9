package s3

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourcesync-go/resourcesync/internal/httpclient"
	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/storage"
)

// DefaultPartSize is the size up to which an object is PUT whole, and the
// size of each part of a larger one's multipart upload.
const DefaultPartSize = 8 << 20

// MinPartSize is S3's smallest part (but the last).
const MinPartSize = 5 << 20

// DefaultRegion is the region used when none is configured.
const DefaultRegion = "us-east-1"

// Options override the standard AWS chain for one bucket.
type Options struct {
	// Endpoint is the base URL of an S3-compatible server
	// (--s3-endpoint); "" for the chain's (AWS_ENDPOINT_URL_S3,
	// AWS_ENDPOINT_URL, the profile's endpoint_url) or AWS itself.
	Endpoint string
	// VirtualHosted addresses a custom endpoint's buckets as host names
	// (BUCKET.host) instead of path-style (host/BUCKET), the default for
	// a custom endpoint.
	VirtualHosted bool
	// Region; "" for the chain's, else DefaultRegion.
	Region string
	// CACertFile is a PEM bundle of CA certificates trusted besides the
	// system's (--ca-cert); Insecure skips verification (--insecure).
	CACertFile string
	Insecure   bool
	// HTTPClient, when set, makes the requests (CACertFile and Insecure
	// are then the caller's business).
	HTTPClient *http.Client
	// Credentials, when set, replace the chain's credentials (a Go
	// program's own provider; tests).
	Credentials aws.CredentialsProvider
	// Retry is the retry policy of every request (zero: the defaults).
	Retry retry.Policy
	// PartSize is the single-PUT limit and multipart part size (0:
	// DefaultPartSize; at least MinPartSize).
	PartSize int64
	// OnRetry, when set, is told of each retry (for a command's
	// progress); its error ends the request.
	OnRetry func(op string, n int, err error, wait time.Duration) error
}

type optionsKey struct{}

// WithOptions returns ctx carrying o to the openers the package registers
// with storage: a command fills o from its flags, then opens any location
// through storage.OpenContent or storage.OpenTarget.
func WithOptions(ctx context.Context, o Options) context.Context {
	return context.WithValue(ctx, optionsKey{}, o)
}

func optionsFrom(ctx context.Context) Options {
	o, _ := ctx.Value(optionsKey{}).(Options)
	return o
}

// location is a parsed s3:// location.
type location struct {
	bucket, prefix   string // prefix "" or ending in "/"
	endpoint, region string
}

// parseLocation reads s3://BUCKET[/PREFIX][?endpoint=URL&region=NAME].
func parseLocation(loc string) (location, error) {
	var l location
	rest, ok := cutPrefixFold(loc, "s3://")
	if !ok {
		return l, fmt.Errorf("s3: %q: want s3://BUCKET/PREFIX", hide(loc))
	}
	rest, query, hasQuery := strings.Cut(rest, "?")
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" || strings.ContainsAny(bucket, " \\:@#\x00") {
		return l, fmt.Errorf("s3: %q: want s3://BUCKET/PREFIX with a bucket name", hide(loc))
	}
	l.bucket = bucket
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		if !storage.ValidKey(prefix) {
			return l, fmt.Errorf("s3: %q: the prefix %q has an empty, \".\" or \"..\" component", hide(loc), prefix)
		}
		l.prefix = prefix + "/"
	}
	if hasQuery {
		q, err := url.ParseQuery(query)
		if err != nil {
			return l, fmt.Errorf("s3: %q: %w", hide(loc), err)
		}
		for k, v := range q {
			switch k {
			case "endpoint":
				u, err := url.Parse(v[0])
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return l, fmt.Errorf("s3: %q: endpoint %q is not an http(s) URL", hide(loc), hide(v[0]))
				}
				l.endpoint = v[0]
			case "region":
				l.region = v[0]
			default:
				return l, fmt.Errorf("s3: %q: unknown option %q (known: endpoint, region)", hide(loc), k)
			}
		}
	}
	return l, nil
}

// userinfoSlash is the userinfo of a URL whose password holds an
// unescaped "/" (an AWS secret key pasted as it is), which
// redact.String, ending a password where a path may start, leaves.
var userinfoSlash = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://[^\s/?#@:"'<>]*):[^\s?#"'<>]*@`)

// hide is redact.String with such passwords hidden too: what a location
// becomes in messages.
func hide(s string) string {
	return redact.String(userinfoSlash.ReplaceAllString(s, "${1}:"+redact.Mask+"@"))
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// bucket is what Content and Target share: a client of one bucket and
// prefix.
type bucket struct {
	client   *s3.Client
	http     *http.Client
	name     string // bucket
	prefix   string // "" or ending in "/"
	loc      string // redacted, for messages
	policy   retry.Policy
	partSize int64
	onRetry  func(op string, n int, err error, wait time.Duration) error
	redact   func(string) string
	// etagNotMD5: a committed object's bytes, read back, matched although
	// its ETag is not their MD5 (a server that makes ETags otherwise):
	// ETags are not compared with MD5s any more.
	etagNotMD5 atomic.Bool
}

func open(ctx context.Context, loc string, o Options) (*bucket, error) {
	l, err := parseLocation(loc)
	if err != nil {
		return nil, err
	}
	if l.endpoint != "" {
		o.Endpoint = l.endpoint
	}
	if l.region != "" {
		o.Region = l.region
	}
	b := &bucket{
		name: l.bucket, prefix: l.prefix, loc: hide(loc),
		policy: o.Retry, partSize: o.PartSize, onRetry: o.OnRetry,
		redact: redact.String,
	}
	if b.partSize == 0 {
		b.partSize = DefaultPartSize
	}
	if b.partSize < MinPartSize {
		return nil, fmt.Errorf("s3: part size %d is below S3's minimum %d", b.partSize, MinPartSize)
	}
	// The SDK's buildable client takes the chain's CA bundle
	// (AWS_CA_BUNDLE, a profile's ca_bundle); its transport is then
	// wrapped by internal/httpclient, which adds --ca-cert and
	// --insecure and names the flag that fixes a certificate error.
	bc := awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		// Sixteen writers and more keep their connections: the default
		// of 10 idle per host would close and reopen them.
		tr.MaxIdleConns = 256
		tr.MaxIdleConnsPerHost = 256
	})
	var lopts []func(*config.LoadOptions) error
	lopts = append(lopts, config.WithHTTPClient(bc), config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }))
	if o.Region != "" {
		lopts = append(lopts, config.WithRegion(o.Region))
	}
	if o.Credentials != nil {
		lopts = append(lopts, config.WithCredentialsProvider(o.Credentials))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lopts...)
	if err != nil {
		return nil, fmt.Errorf("s3: AWS configuration: %w", redact.Error(err))
	}
	hc := o.HTTPClient
	if hc == nil {
		tr := bc.GetTransport()
		if loaded, ok := cfg.HTTPClient.(*awshttp.BuildableClient); ok {
			tr = loaded.GetTransport()
		}
		auth, err := httpclient.New(httpclient.Options{CACertFile: o.CACertFile, Insecure: o.Insecure})
		if err != nil {
			return nil, fmt.Errorf("s3: %w", err)
		}
		if hc, err = auth.Client(&http.Client{Transport: tr}); err != nil {
			return nil, fmt.Errorf("s3: %w", err)
		}
	}
	b.http = hc
	cfg.HTTPClient = hc
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	// The credentials in use are redacted from every message, as the
	// patterns of internal/redact are.
	if cfg.Credentials != nil {
		creds, err := cfg.Credentials.Retrieve(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3: %s: no credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE): %w", b.loc, redact.Error(err))
		}
		b.redact = redact.Secrets(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken)
	}
	b.client = s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		if so.BaseEndpoint != nil && !o.VirtualHosted {
			so.UsePathStyle = true
		}
		so.Retryer = aws.NopRetryer{}
		// The checksums this package sends are its own (computed in the
		// one pass that buffers the bytes); the SDK adds none.
		so.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		so.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		so.DisableLogOutputChecksumValidationSkipped = true
		// Expect: 100-continue costs a round trip per part on loopback
		// and some S3-compatible servers mishandle it.
		so.ContinueHeaderThresholdBytes = -1
	})
	// Location names the bucket one way whatever the spelling, with the
	// endpoint that serves it (one bucket name may live on two): a
	// mirror's default state is named after it.
	b.loc = "s3://" + b.name + "/" + strings.TrimSuffix(b.prefix, "/")
	if ep := aws.ToString(b.client.Options().BaseEndpoint); ep != "" {
		if u, err := url.Parse(ep); err == nil {
			u.User = nil // a password is no part of a name
			ep = u.String()
		}
		b.loc += "?endpoint=" + ep
	}
	b.loc = hide(b.loc)
	// One listing of a key at most proves the bucket, the credentials and
	// the endpoint now rather than at the first object: a HEAD's answer
	// has no body, and some servers (versitygw) answer an unknown key
	// with a bare 404 that would read as "no such object".
	err = b.do(ctx, "LIST", "", func(ctx context.Context) error {
		_, err := b.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b.name), Prefix: aws.String(b.prefix), MaxKeys: aws.Int32(1)})
		return err
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

// full returns the object key of a storage key.
func (b *bucket) full(key string) string { return b.prefix + key }

// uri names an object in messages.
func (b *bucket) uri(key string) string { return "s3://" + b.name + "/" + b.prefix + key }

// do runs fn under the retry policy; op names the request in errors
// ("PUT"). The error returned is classified (ErrNotExist, ErrExists,
// ErrRefused), says what happened after how many attempts, and holds no
// secret.
func (b *bucket) do(ctx context.Context, op, key string, fn func(ctx context.Context) error) error {
	calls, err := retry.Do(ctx, b.policy, func() (bool, error) {
		err := fn(ctx)
		if err == nil {
			return false, nil
		}
		return classify(err)
	}, func(n int, err error, wait time.Duration) error {
		if b.onRetry != nil {
			return b.onRetry(op, n, b.wrap(op, key, err, 0), wait)
		}
		return nil
	})
	if err == nil {
		return nil
	}
	return b.wrap(op, key, err, calls)
}

// Error is a failed request.
type Error struct {
	Op       string // "PUT", "GET", "LIST", …
	URI      string // s3://bucket/key
	Attempts int    // requests made (0: not counted)
	Err      error  // classified; redacted message
	msg      string
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.Err }

func (b *bucket) wrap(op, key string, err error, calls int) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	err = retry.Strip(err)
	msg := op + " " + b.uri(key) + ": " + err.Error()
	if calls > 1 {
		msg += fmt.Sprintf(" (after %d attempts)", calls)
	}
	return &Error{Op: op, URI: b.uri(key), Attempts: calls, Err: err, msg: b.redact(msg)}
}

func (b *bucket) close() error {
	b.http.CloseIdleConnections()
	return nil
}
