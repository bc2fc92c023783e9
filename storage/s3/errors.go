package s3

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/storage"
)

// ErrChanged: the object changed while it was read (a resumed read found
// another ETag); the reader stops rather than mix two versions.
var ErrChanged = errors.New("s3: object changed while it was read")

// ErrNoBucket: the bucket does not exist (it wraps storage.ErrNotExist).
var ErrNoBucket = fmt.Errorf("s3: no such bucket: %w", storage.ErrNotExist)

// apiError is an S3 error answer: status, code and message, classified by
// internal/retry through StatusCode.
type apiError struct {
	status        int
	code, message string
	kind          error // storage.ErrNotExist, ErrExists, ErrRefused or nil
	retryable     bool  // retried whatever the status says
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("%d %s", e.status, e.code)
	if e.message != "" {
		s += ": " + e.message
	}
	return s
}

func (e *apiError) Unwrap() error { return e.kind }

// StatusCode lets internal/retry judge the status; codes S3 answers with a
// status retry.RetryableStatus refuses but a new attempt can fix report
// 503.
func (e *apiError) StatusCode() int {
	if e.retryable {
		return http.StatusServiceUnavailable
	}
	return e.status
}

// Permanent: a missing object, a failed condition or a refusal is an
// answer, not a failure.
func (e *apiError) Permanent() bool { return e.kind != nil }

// retryableCodes are error codes a new attempt can fix although their
// status (400, 409) says the request itself was wrong: bytes damaged or
// stalled on the way, a concurrent conditional write.
var retryableCodes = map[string]bool{
	"BadDigest": true, "XAmzContentSHA256Mismatch": true, "RequestTimeout": true,
	"ConditionalRequestConflict": true, "SlowDown": true, "InternalError": true,
	"ServiceUnavailable": true, "IncompleteBody": true,
}

// authCodes are the answers to credentials that do not work.
var authCodes = map[string]bool{
	"AccessDenied": true, "InvalidAccessKeyId": true, "SignatureDoesNotMatch": true,
	"InvalidToken": true, "ExpiredToken": true, "TokenRefreshRequired": true,
	"InvalidSecurity": true, "AuthorizationHeaderMalformed": true, "AccountProblem": true,
	"XAdminUserNotFound": true, "AllAccessDisabled": true, "RequestTimeTooSkewed": true,
}

// classify turns an SDK error into an *apiError (or keeps a network error
// as it is) and says whether to try again, by internal/retry's rules.
func classify(err error) (bool, error) {
	if errors.Is(err, context.Canceled) {
		return false, err
	}
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() == 0 {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			// An error the SDK raised without a response (a malformed
			// answer, a 200 carrying an error): retried as a 500.
			e := &apiError{status: http.StatusInternalServerError, code: ae.ErrorCode(), message: ae.ErrorMessage()}
			return retry.Classify(e)
		}
		// A network error, a reset, a truncated answer: internal/retry
		// judges it as it is (unwrapping the SDK's operation error keeps
		// messages short).
		var oe *smithy.OperationError
		if errors.As(err, &oe) {
			err = oe.Err
		}
		var se *smithyhttp.RequestSendError
		if errors.As(err, &se) {
			err = se.Err
		}
		if errors.As(err, &re) && re.Err != nil {
			err = re.Err
		}
		var ce *smithy.CanceledError
		if errors.As(err, &ce) {
			return false, ce.Err
		}
		return retry.Classify(err)
	}
	e := &apiError{status: re.HTTPStatusCode()}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		e.code, e.message = ae.ErrorCode(), ae.ErrorMessage()
	}
	if e.code == "" {
		e.code = http.StatusText(e.status)
	}
	switch {
	case authCodes[e.code]:
		// Whatever the status (versitygw answers an unknown key with 404
		// XAdminUserNotFound): a credential problem is never "no such
		// object".
		e.kind = storage.ErrRefused
	case e.code == "NoSuchBucket":
		e.kind = ErrNoBucket
	case e.status == http.StatusNotFound:
		e.kind = storage.ErrNotExist
	case e.status == http.StatusPreconditionFailed:
		e.kind = storage.ErrExists
	case e.status == http.StatusForbidden || e.status == http.StatusMethodNotAllowed:
		e.kind = storage.ErrRefused
	}
	e.retryable = retryableCodes[e.code]
	var wait time.Duration
	if re.Response != nil {
		wait = retry.ParseRetryAfter(re.Response.Header.Get("Retry-After"), time.Now())
	}
	return retry.Classify(retry.WithRetryAfter(e, wait))
}
