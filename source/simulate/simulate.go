// Package simulate maintains a synthetic collection of files that changes
// at a steady rate: resources are created, updated and deleted in a
// sequence determined by a seed alone (not by timing), so that tests and
// benchmarks get a reproducible changing Source.
package simulate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

// Collection is a directory of synthetic resources.
type Collection struct {
	Dir  string
	rng  *rand.Rand
	live []int       // ids of existing resources
	pos  map[int]int // id -> index in live
	ver  map[int]int
	next int
	size int // target number of resources
}

// Op is one change made to the collection.
type Op struct {
	Change rs.Change
	Path   string // relative, slash-separated
}

// New creates n resources in dir (which must exist) for seed.
func New(dir string, n int, seed uint64) (*Collection, error) {
	c := &Collection{Dir: dir, rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), pos: map[int]int{}, ver: map[int]int{}, size: n}
	for i := 0; i < n; i++ {
		if _, err := c.create(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Len returns the number of resources.
func (c *Collection) Len() int { return len(c.live) }

// RelPath returns the path of resource id.
func RelPath(id int) string { return fmt.Sprintf("res/%03d/%06d.txt", id%1000/10, id) }

func (c *Collection) write(id int) error {
	c.ver[id]++
	n := 64 + c.rng.IntN(2048)
	b := make([]byte, 0, n+64)
	b = fmt.Appendf(b, "resource %d version %d\n", id, c.ver[id])
	for len(b) < n {
		b = append(b, byte('a'+c.rng.IntN(26)))
	}
	b = append(b, '\n')
	p := filepath.Join(c.Dir, filepath.FromSlash(RelPath(id)))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	// Write a hidden file (scans skip it) and rename it into place, so
	// that a scan never sees a half-written resource.
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func (c *Collection) create() (Op, error) {
	id := c.next
	c.next++
	if err := c.write(id); err != nil {
		return Op{}, err
	}
	c.pos[id] = len(c.live)
	c.live = append(c.live, id)
	return Op{rs.Created, RelPath(id)}, nil
}

// Step makes one change: a create, an update or a delete, chosen so that
// the collection stays near its initial size.
func (c *Collection) Step() (Op, error) {
	r := c.rng.Float64()
	switch {
	case len(c.live) == 0 || r < 0.2 || (r < 0.4 && len(c.live) < c.size):
		return c.create()
	case r < 0.4:
		i := c.rng.IntN(len(c.live))
		id := c.live[i]
		last := c.live[len(c.live)-1]
		c.live[i] = last
		c.pos[last] = i
		c.live = c.live[:len(c.live)-1]
		delete(c.pos, id)
		if err := os.Remove(filepath.Join(c.Dir, filepath.FromSlash(RelPath(id)))); err != nil {
			return Op{}, err
		}
		return Op{rs.Deleted, RelPath(id)}, nil
	default:
		id := c.live[c.rng.IntN(len(c.live))]
		if err := c.write(id); err != nil {
			return Op{}, err
		}
		return Op{rs.Updated, RelPath(id)}, nil
	}
}

// Run makes changes at rate per second until ctx is done, calling after
// with the changes of each tick (ticks are at most 10 per second).
func (c *Collection) Run(ctx context.Context, rate float64, after func([]Op)) error {
	if rate <= 0 {
		<-ctx.Done()
		return nil
	}
	interval := max(time.Duration(float64(time.Second)/rate), 100*time.Millisecond)
	t := time.NewTicker(interval)
	defer t.Stop()
	start := time.Now()
	done := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			due := int(now.Sub(start).Seconds()*rate) - done
			var ops []Op
			for ; due > 0; due-- {
				op, err := c.Step()
				if err != nil {
					return err
				}
				ops = append(ops, op)
				done++
			}
			if len(ops) > 0 && after != nil {
				after(ops)
			}
		}
	}
}
