package aggstoretest

import (
	"testing"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
)

// RunShared runs the cases of Run on two handles of one store (two
// nodes, as two processes see it): node A writes through a, node B
// through b; open2 returns them, fresh for each subtest.
func RunShared(t *testing.T, open2 func(t *testing.T) (a, b aggstore.Store)) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := open2(t)
			c.fn(t, a, b)
		})
	}
}
