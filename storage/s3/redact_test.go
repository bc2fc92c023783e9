package s3

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/resourcesync-go/resourcesync/storage"
)

// TestNoKeysInErrors: whatever fails, no message holds the access key, the
// secret key or the session token in use, whether they came from Options
// or from the environment (the standard chain), and a location's
// credentials are redacted from Location.
func TestNoKeysInErrors(t *testing.T) {
	tb := newTestBucket(t)
	ctx := context.Background()
	const (
		badID     = "AKIAWRONGWRONGWRONG1"
		badSecret = "not-the-secret/but+long=enough"
		badToken  = "session-token-that-is-secret"
	)
	check := func(t *testing.T, err error, secrets ...string) {
		t.Helper()
		if err == nil {
			t.Fatal("no error")
		}
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("error holds %q: %v", s, err)
			}
		}
	}
	t.Run("options", func(t *testing.T) {
		o := tb.options("")
		for _, token := range []string{"", badToken} {
			o.Credentials = credentials.NewStaticCredentialsProvider(tb.srv.AccessKey, badSecret, token)
			_, err := OpenTarget(ctx, tb.loc(), o)
			check(t, err, tb.srv.AccessKey, badSecret, badToken)
			if !errors.Is(err, storage.ErrRefused) {
				t.Errorf("a refused signature is not ErrRefused: %v", err)
			}
			t.Log(err)
		}
	})
	t.Run("env", func(t *testing.T) {
		tb.srv.SetEnv(t)
		t.Setenv("AWS_ACCESS_KEY_ID", badID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", badSecret)
		_, err := storage.OpenContent(ctx, "s3://"+tb.name+"/p")
		check(t, err, badID, badSecret)
		if errors.Is(err, storage.ErrNotExist) || !errors.Is(err, storage.ErrRefused) {
			t.Errorf("an unknown key is not ErrRefused: %v", err)
		}
		t.Log(err)
	})
	t.Run("location", func(t *testing.T) {
		tb.srv.SetEnv(t)
		loc := "s3://" + tb.name + "/p?endpoint=http://user:pa55word@127.0.0.1:1/"
		_, err := storage.OpenContent(ctx, loc)
		check(t, err, "pa55word", tb.srv.SecretKey)
		t.Log(err)
		o := tb.options("")
		o.Endpoint = ""
		c, err := OpenContent(ctx, strings.Replace(loc, "127.0.0.1:1", strings.TrimPrefix(tb.srv.Endpoint, "http://"), 1), o)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(c.Location(), "pa55word") {
			t.Errorf("Location %q", c.Location())
		}
	})
}
