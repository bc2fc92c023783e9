// Package s3 implements storage.Content and storage.Target for an
// S3-compatible bucket, s3://BUCKET/PREFIX, and registers the scheme "s3"
// with the storage registry. It is the proof of the content seams: this
// package and its registration are all an object storage takes.
//
// # Locations and configuration
//
// A location is s3://BUCKET[/PREFIX][?endpoint=URL&region=NAME]. PREFIX
// is taken literally, as aws s3 and rclone take it (not percent-decoded),
// and names a folder: keys are relative to PREFIX + "/". The query names
// options for this location alone.
//
// Credentials and settings come the way S3 users already have them, from
// the standard AWS chain of aws-sdk-go-v2's config package:
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN;
// AWS_PROFILE with the shared config and credentials files; AWS_REGION;
// AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_S3; AWS_CA_BUNDLE. Options (from a
// command's --s3-endpoint and --ca-cert, carried to the registry's opener
// by WithOptions) and the location's query override them. A custom
// endpoint (any of the above) is addressed path-style (http://host/BUCKET/
// KEY), as S3-compatible servers expect, unless Options.VirtualHosted.
// The region defaults to us-east-1 when none is configured.
//
// Keys and secrets never appear in an error of this package: every
// message goes through internal/redact with the credentials in use.
//
// # Why aws-sdk-go-v2
//
// The issue asked for aws-sdk-go-v2 against minio-go: it reads the whole
// standard chain (profiles, SSO, web identity, process credentials, the
// endpoint variables) as the aws command does, so a user's existing setup
// works unchanged, and it is maintained by the service's vendor. Its
// transfer managers are not used: they take an io.Reader and run their
// own goroutines and retries, while a Target's Writer is pushed to and
// every request here runs under internal/retry; the multipart upload is
// the few calls below, each part checked.
//
// # Retries: one policy
//
// The SDK's own retryer is switched off (aws.NopRetryer): every request
// runs in internal/retry.Do under the package's Policy, so that S3 answers
// are retried exactly like every other request of the toolkit. S3 errors
// are classified first: 503 SlowDown, 500 InternalError, 429, resets and
// truncated bodies are retried (Retry-After honoured); 409
// ConditionalRequestConflict (a concurrent conditional write), 400
// BadDigest, XAmzContentSHA256Mismatch and RequestTimeout (bytes damaged
// or stalled on the way) are retried too, since a new attempt resends
// the bytes; 404 is storage.ErrNotExist (NoSuchBucket: ErrNoBucket), 412
// is storage.ErrExists, 403 and the answers to credentials that do not
// work (whatever their status) are storage.ErrRefused, none of them
// retried. Errors are *Error: the request, the object, the answer and
// the number of attempts.
//
// # Reading (Content)
//
// List pages through ListObjectsV2 (1,000 keys a page, the next one
// fetched while the caller works on the current one: two pages at most,
// memory flat) in the server's order, UTF-8 binary order, which is byte order; a server
// that lists out of order is an error. Keys that are not storage keys
// (folder markers "dir/", "a//b", "." or ".." components) are skipped.
// Version is the ETag without its quotes. ModTime is the "mtime" metadata
// (rclone's convention, seconds.nanoseconds) where Stat and Open can read
// it, and LastModified in a listing, which carries no metadata. An
// emptied bucket or a missing prefix lists nothing; a missing bucket is
// storage.ErrNotExist.
//
// Open reads with a Range and pins what it reads to the ETag of its first
// response: a read cut short is resumed where it stopped with If-Match,
// so an object overwritten meanwhile fails the read (ErrChanged) instead
// of mixing two versions. Each resumption runs under the retry policy;
// a read that made progress starts the count again.
//
// # Writing (Target)
//
// A Writer keeps up to Options.PartSize (8 MiB) in memory and PUTs it at
// Commit with Content-MD5 and x-amz-checksum-sha256 of the bytes (the
// server refuses bytes damaged on the way) and the SigV4 payload hash
// computed from the same pass. A larger object becomes a multipart
// upload, each part sent with its Content-MD5 and its returned ETag
// checked; Abort or a failed Commit aborts the upload. When PutOptions
// gives Size (≥ 0), MD5 or SHA256, Commit refuses bytes that differ
// (storage.ErrIntegrity) before anything is visible. ModTime is kept in
// metadata "mtime" (now when not given), ContentType as the object's
// Content-Type.
//
// NoReplace sends If-None-Match: * and IfVersion sends If-Match: "ETag" on
// the PUT or CompleteMultipartUpload, and Remove's ifVersion If-Match on
// the DELETE: conditional writes, which AWS S3 and versitygw (v1.8.0:
// PutObject, CompleteMultipartUpload and DeleteObject, under a per-key
// lock) check atomically. A server that ignores them leaves the window
// between a Stat and the write. If-Match on a key that holds nothing
// (404) is storage.ErrExists too: the version is gone. A conditional
// write retried after a lost response finds its own object there (412):
// Commit then compares the object's ETag with the one its bytes make (or
// its bytes, where ETags are not MD5s) and reports success when they
// agree.
//
// A response ETag other than the one the bytes make (their MD5, or the
// MD5 of the parts' MD5s and the part count; not checked under SSE-KMS or
// SSE-C) is a doubt: a HEAD that names the right ETag settles it (the
// answer was garbled); else the object is read back and hashed. The same
// bytes mean the server makes its ETags otherwise (versitygw's
// --data-integrity-etag, some gateways): its ETag is the Version and the
// bucket's ETags are not compared again. Other bytes are removed
// (If-Match their ETag) and Commit fails: nothing wrong stays visible. A
// part answered with another ETag than its MD5 is sent again.
//
// Open checks the bucket, the credentials and the endpoint with one
// listing of one key: a credential problem is storage.ErrRefused there,
// never a "no such object" later (a HEAD's answer has no body, and
// versitygw answers an unknown key with 404).
//
// A known PutOptions.Size beyond 10,000 parts (S3's limit) gets larger
// parts; an unknown size fails past 10,000 parts of PartSize (78 GiB at
// 8 MiB). Memory: one part buffer per writer being written.
//
// After a kill -9 during a multipart upload, the parts sent remain as an
// incomplete upload: invisible (never listed, never under the key), but
// stored. Target.CleanupUploads aborts the uploads under the prefix
// started before a given time; a bucket lifecycle rule
// (AbortIncompleteMultipartUpload) does the same on AWS.
package s3
