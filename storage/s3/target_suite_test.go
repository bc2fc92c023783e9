package s3

import (
	"testing"

	"github.com/resourcesync-go/resourcesync/storage/storagetest"
)

// The Target contract suite, here on versitygw.
func TestTargetSuite(t *testing.T) {
	storagetest.TargetSuite(t, newTestTarget)
}
