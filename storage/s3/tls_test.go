package s3

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/resourcesync-go/resourcesync/internal/httpclient"
	"github.com/resourcesync-go/resourcesync/internal/testing/s3test"
)

// TestCACert: an endpoint whose certificate a private CA signed is
// reached with --ca-cert (Options.CACertFile), with AWS_CA_BUNDLE (the
// chain's) or with --insecure; without them the error names the flag that
// fixes it and is not retried.
func TestCACert(t *testing.T) {
	srv, ca := s3test.StartTLS(t)
	bucket := srv.NewBucket(t)
	loc := "s3://" + bucket + "/p"
	for _, tc := range []struct {
		name   string
		opt    Options
		bundle string // AWS_CA_BUNDLE
		fail   bool
	}{
		{"ca-cert", Options{CACertFile: ca}, "", false},
		{"aws-ca-bundle", Options{}, ca, false},
		{"insecure", Options{Insecure: true}, "", false},
		{"untrusted", Options{}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_CA_BUNDLE", tc.bundle)
			o := tc.opt
			o.Endpoint = srv.Endpoint
			o.Region = srv.Region
			o.Credentials = credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, "")
			o.Retry = fastRetry
			c, err := OpenContent(context.Background(), loc, o)
			if !tc.fail {
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
				return
			}
			var ce *httpclient.CertError
			var se *Error
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), "--ca-cert") || !errors.As(err, &se) || se.Attempts != 1 {
				t.Fatalf("untrusted certificate: %v", err)
			}
			t.Log(err)
		})
	}
}
