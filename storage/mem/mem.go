// Package mem is an in-memory twin of a storage: scheme "mem://NAME" (or
// "mem://NAME/PREFIX", a prefix of keys inside it).
//
// Stores are shared by name within the process: Open("x") returns the
// same *Store each time, and storage.OpenContent("mem://x") reads it, so a
// test can fill a Store and hand its location to a Source (or a mirror)
// that opens it by itself. Nothing is ever written to disk; Forget drops
// a Store.
//
// An object's Version is the hex MD5 of its bytes, as an S3 ETag of a
// single-part upload is: putting the same bytes again keeps the Version
// (and changes the ModTime), putting other bytes changes it. That is
// the behaviour a Source reading a bucket meets, so the Source's tests on
// mem:// exercise the same rules as on S3.
package mem

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/storage"
)

// Object is what a Store holds under a key.
type Object struct {
	Data        []byte
	ModTime     time.Time // zero: the time of the Put
	ContentType string
	Meta        map[string]string
}

// object is an Object as kept: its bytes are never changed once stored
// (a Put replaces the object), so readers may hold them without the lock.
type object struct {
	data        []byte
	modTime     time.Time
	version     string
	contentType string
	meta        map[string]string
}

func (o *object) info(key string) storage.Info {
	return storage.Info{Key: key, Size: int64(len(o.data)), ModTime: o.modTime, Version: o.version, ContentType: o.contentType, Meta: maps.Clone(o.meta)}
}

// Store is one named in-memory storage. Its methods are safe for
// concurrent use.
type Store struct {
	name string

	mu   sync.Mutex
	objs map[string]*object
	keys []string // the keys of objs, sorted (byte order)
	// opens counts Opens of the Content side, for tests that check a
	// rescan reads nothing.
	opens int64
}

var (
	storesMu sync.Mutex
	stores   = map[string]*Store{}
)

// Open returns the Store named name, creating it empty the first time.
func Open(name string) *Store {
	storesMu.Lock()
	defer storesMu.Unlock()
	s := stores[name]
	if s == nil {
		s = &Store{name: name, objs: map[string]*object{}}
		stores[name] = s
	}
	return s
}

// Forget drops the Store named name: the next Open makes a new, empty one.
func Forget(name string) {
	storesMu.Lock()
	defer storesMu.Unlock()
	delete(stores, name)
}

// Name returns the Store's name.
func (s *Store) Name() string { return s.name }

// Location returns the Store's location, "mem://NAME".
func (s *Store) Location() string { return "mem://" + s.name }

// Put stores data under key with the current time, replacing any object
// there, and returns the new object's Info.
func (s *Store) Put(key string, data []byte) (storage.Info, error) {
	return s.PutObject(key, Object{Data: data})
}

// PutObject stores o under key, replacing any object there. The bytes are
// copied.
func (s *Store) PutObject(key string, o Object) (storage.Info, error) {
	if !storage.ValidKey(key) {
		return storage.Info{}, fmt.Errorf("mem: %w: %q", storage.ErrBadKey, key)
	}
	if o.ModTime.IsZero() {
		o.ModTime = time.Now()
	}
	sum := md5.Sum(o.Data)
	ob := &object{data: slices.Clone(o.Data), modTime: o.ModTime.Round(0), version: hex.EncodeToString(sum[:]), contentType: o.ContentType, meta: maps.Clone(o.Meta)}
	if ob.data == nil {
		ob.data = []byte{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(key, ob)
	return ob.info(key), nil
}

// put stores ob under key; s.mu is held.
func (s *Store) put(key string, ob *object) {
	if _, ok := s.objs[key]; !ok {
		i, _ := slices.BinarySearch(s.keys, key)
		s.keys = slices.Insert(s.keys, i, key)
	}
	s.objs[key] = ob
}

// Delete removes the object under key and reports whether there was one.
func (s *Store) Delete(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.del(key)
}

// del removes key; s.mu is held.
func (s *Store) del(key string) bool {
	if _, ok := s.objs[key]; !ok {
		return false
	}
	delete(s.objs, key)
	i, _ := slices.BinarySearch(s.keys, key)
	s.keys = slices.Delete(s.keys, i, i+1)
	return true
}

// Get returns a copy of the object under key.
func (s *Store) Get(key string) (Object, storage.Info, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ob, ok := s.objs[key]
	if !ok {
		return Object{}, storage.Info{}, false
	}
	return Object{Data: slices.Clone(ob.data), ModTime: ob.modTime, ContentType: ob.contentType, Meta: maps.Clone(ob.meta)}, ob.info(key), true
}

// Keys returns every key, sorted.
func (s *Store) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.keys)
}

// Len returns the number of objects.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}

// Opens returns how many times the Content side opened an object.
func (s *Store) Opens() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opens
}

// pageSize is how many objects a listing copies under the lock at once,
// as an S3 listing page holds 1,000: fn runs without the lock, and may
// change the Store.
const pageSize = 1000

// page returns up to pageSize Infos of the keys with the prefix, after
// after (keys given without the prefix).
func (s *Store) page(prefix, after string) []storage.Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	from := prefix + after
	i := sort.SearchStrings(s.keys, from)
	if i < len(s.keys) && s.keys[i] == from && after != "" {
		i++
	}
	var out []storage.Info
	for ; i < len(s.keys) && len(out) < pageSize; i++ {
		k := s.keys[i]
		if !strings.HasPrefix(k, prefix) {
			break
		}
		out = append(out, s.objs[k].info(k[len(prefix):]))
	}
	return out
}
