package s3

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/resourcesync-go/resourcesync/storage"
)

// TestListOddKeys: objects another writer put under keys no storage key
// can be ("dir/" markers, "a//b", "..", a control character, a key that
// is a file and a prefix at once) are not listed or are listed as they
// are, and never stop the listing of the others.
func TestListOddKeys(t *testing.T) {
	t.Parallel()
	tb := newTestBucket(t)
	for _, k := range []string{"a", "a/b", "d/", "x//y", "x/../y", "ctl\x01key", "tab\tkey", "sp ace+plus%25&amp;<", "z"} {
		_, err := tb.raw.PutObject(context.Background(), &s3.PutObjectInput{
			Bucket: aws.String(tb.name), Key: aws.String(tb.prefix + k), Body: strings.NewReader(k),
		})
		t.Logf("put %q: %v", k, err)
	}
	c := tb.content(t, "")
	var keys []string
	err := c.List(context.Background(), "", func(in storage.Info) error {
		keys = append(keys, in.Key)
		return nil
	})
	t.Logf("%q %v", keys, err)
	if err != nil {
		t.Fatal(err)
	}
	// Keys that are valid storage keys are listed as they are (versitygw
	// keeps a bucket as a directory: "x//y" and "x/../y" are cleaned when
	// put, a control character listed as U+FFFD; not ours to judge).
	want := map[string]bool{"a": true, "tab\tkey": true, "sp ace+plus%25&amp;<": true, "z": true}
	for _, k := range keys {
		if !storage.ValidKey(k) {
			t.Errorf("listed the invalid key %q", k)
		}
		delete(want, k)
	}
	if len(want) > 0 {
		t.Errorf("not listed: %v", want)
	}
}
