package pgstore

import (
	"context"
	"net"
	"syscall"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
)

// TestKeepAlive: the pool's connections probe an idle flow after 5 s, so
// that a dead one fails in seconds (see Open), not in pgx's 45 minutes.
func TestKeepAlive(t *testing.T) {
	pgtest.Skip(t)
	s := openT(t, pgtest.Database(t))
	c, err := s.pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	raw, err := c.Conn().PgConn().Conn().(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var idle, cnt int
	raw.Control(func(fd uintptr) {
		idle, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
		cnt, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT)
	})
	if idle != 5 || cnt != 3 {
		t.Errorf("TCP keepalive idle %d s, %d probes; want 5 s, 3", idle, cnt)
	}
}
