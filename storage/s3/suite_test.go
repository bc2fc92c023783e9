package s3

import (
	"testing"

	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/storagetest"
)

// The contract suites every storage runs, here on versitygw.
func TestContentSuite(t *testing.T) {
	storagetest.ContentSuite(t, func(t *testing.T) (storage.Content, storagetest.Filler) { return newTestContent(t) })
}
