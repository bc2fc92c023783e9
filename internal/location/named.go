package location

import (
	"strings"
	"sync"
)

// Named holds the in-memory instances of a mem: scheme by name, for the
// life of the process: mem:NAME opened twice, or again after a Close, is
// one instance, as a path opened twice is one directory. The zero value
// is ready.
type Named[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

// Get returns the instance l names (mem:NAME or mem://NAME: one name),
// made by create the first time.
func (n *Named[T]) Get(l Location, create func() T) T {
	name := strings.TrimPrefix(l.Rest, "//")
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[string]T{}
	}
	v, ok := n.m[name]
	if !ok {
		v = create()
		n.m[name] = v
	}
	return v
}
