package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Snapshot files live in the collection's snapshot directory, named by the
// version key: KEY.nt (the whole graph) and, for a chunked snapshot,
// KEY.chunk-I.nt. KEY.nt is renamed into place last, so its presence says
// the whole snapshot (chunks included) is complete. The builder keeps the
// current snapshot, the previous complete one, and any superseded less than
// snapshotGrace ago, so that a client that read the snapshots feed just
// before a burst of changes can still fetch what it named.

func (c *Collection) snapFile(key string) string { return filepath.Join(c.snapDir, key+".nt") }

func (c *Collection) chunkFile(key string, i int) string {
	return filepath.Join(c.snapDir, fmt.Sprintf("%s.chunk-%d.nt", key, i))
}

// chunks returns the number of chunks of v's chunked snapshot, 0 when v is
// small enough to need none.
func (c *Collection) chunks(v *version) int {
	n := c.srv.cfg.ChunkSize
	if v.gf.resources <= n {
		return 0
	}
	return (v.gf.resources + n - 1) / n
}

// chunksOnDisk counts the chunk files of snapshot key and returns the
// snapshot file's modification time as its updated instant.
func (c *Collection) chunksOnDisk(key string) (int, time.Time) {
	fi, err := os.Stat(c.snapFile(key))
	if err != nil {
		return 0, time.Time{}
	}
	n := 0
	for {
		if _, err := os.Stat(c.chunkFile(key, n)); err != nil {
			return n, fi.ModTime().UTC()
		}
		n++
	}
}

// snapshotReady reports whether the snapshot files of key are complete.
func (c *Collection) snapshotReady(key string) bool {
	_, err := os.Stat(c.snapFile(key))
	return err == nil
}

// buildSnapshots writes the snapshot of every new version until ctx ends.
func (c *Collection) buildSnapshots(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.changed:
		}
		v := c.acquire()
		if c.snapshotReady(v.key) {
			c.release(v)
			c.prune(v.key)
			continue
		}
		if c.srv.beforeBuild != nil {
			c.srv.beforeBuild(v.key)
		}
		err := c.buildSnapshot(ctx, v)
		c.release(v)
		if err != nil {
			c.buildErr.Store(&buildErr{v.key, err})
			if ctx.Err() == nil {
				c.srv.log.Error("snapshot not written", "collection", c.name, "version", v.key, "err", err)
			}
			continue
		}
		c.srv.log.Info("snapshot written", "collection", c.name, "version", v.key, "triples", v.gf.triples, "chunks", c.chunks(v))
		c.prune(v.key)
	}
}

// buildSnapshot writes v's chunks, then its whole-graph file, streamed
// from its graph file: a chunk holds the fragments of ChunkSize
// resources (each statement once), the last one also the blank-node
// subjects no resource reaches. What is held is the labels of the blank
// nodes, not the statements.
func (c *Collection) buildSnapshot(ctx context.Context, v *version) error {
	if n := c.chunks(v); n > 0 {
		size := c.srv.cfg.ChunkSize
		reached := map[string]bool{} // blank node labels, of every chunk
		var w *chunkWriter
		i, inChunk := 0, 0
		errStop := errors.New("stop")
		err := v.gf.groups(false, func(g group) error {
			if g.key[0] != kindIRI {
				return errStop
			}
			if w == nil {
				if err := ctx.Err(); err != nil {
					return err
				}
				var err error
				if w, err = newChunkWriter(v, c.chunkFile(v.key, i), reached); err != nil {
					return err
				}
			}
			if err := w.fragment(g.key, g.lines); err != nil {
				return err
			}
			if inChunk++; inChunk == size && i < n-1 {
				i, inChunk = i+1, 0
				err := w.finish()
				w = nil
				return err
			}
			return nil
		})
		if err != nil && err != errStop {
			if w != nil {
				w.abort()
			}
			return err
		}
		if w == nil {
			if w, err = newChunkWriter(v, c.chunkFile(v.key, i), reached); err != nil {
				return err
			}
		}
		// Blank-node subjects no resource reaches belong to the snapshot
		// too: the last chunk carries them.
		err = v.gf.groups(true, func(g group) error {
			if reached[g.key[1:]] {
				return nil
			}
			return w.fragment(g.key, g.lines)
		})
		if err != nil {
			w.abort()
			return err
		}
		if err := w.finish(); err != nil {
			return err
		}
	}
	return writeFileAtomic(c.snapFile(v.key), func(w *bufio.Writer) error {
		return v.gf.groups(false, func(g group) error {
			for _, l := range g.lines {
				if _, err := w.WriteString(l); err != nil {
					return err
				}
			}
			return ctx.Err()
		})
	})
}

// chunkWriter writes one chunk: fragments, each statement once.
type chunkWriter struct {
	v       *version
	name    string
	f       *os.File
	w       *bufio.Writer
	written map[string]bool // the blank nodes whose statements this chunk has
	reached map[string]bool
}

func newChunkWriter(v *version, name string, reached map[string]bool) (*chunkWriter, error) {
	f, err := os.CreateTemp(filepath.Dir(name), ".tmp-*")
	if err != nil {
		return nil, err
	}
	return &chunkWriter{v: v, name: name, f: f, w: bufio.NewWriterSize(f, 256<<10), written: map[string]bool{}, reached: reached}, nil
}

// fragment writes the subject of key (its lines given) and the blank
// nodes it reaches, as rdf.Closure walks them.
func (w *chunkWriter) fragment(key string, lines []string) error {
	if key[0] == kindBlank {
		w.written[key[1:]] = true
		w.reached[key[1:]] = true
	}
	queue := [][]string{lines}
	for len(queue) > 0 {
		ls := queue[0]
		queue = queue[1:]
		for _, l := range ls {
			if _, err := w.w.WriteString(l); err != nil {
				return err
			}
			b, ok := blankObject(l)
			if !ok || w.written[b] {
				continue
			}
			w.written[b] = true
			w.reached[b] = true
			more, err := w.v.gf.lines(string(kindBlank) + b)
			if err != nil {
				return err
			}
			queue = append(queue, more)
		}
	}
	return nil
}

func (w *chunkWriter) abort() {
	w.f.Close()
	os.Remove(w.f.Name())
}

// finish syncs the chunk and renames it into place.
func (w *chunkWriter) finish() error {
	if err := errors.Join(w.w.Flush(), w.f.Sync(), w.f.Close()); err != nil {
		os.Remove(w.f.Name())
		return err
	}
	if err := os.Rename(w.f.Name(), w.name); err != nil {
		os.Remove(w.f.Name())
		return err
	}
	return nil
}

// snapshotGrace is how long a superseded snapshot stays on disk after a
// newer one is complete: a client that read the snapshots feed before a
// burst of changes can still fetch the snapshot (and chunks) it was
// offered, however many versions were built meanwhile.
const snapshotGrace = 2 * time.Minute

// prune removes the files of snapshots other than key that were superseded
// more than snapshotGrace ago (a snapshot is superseded when the next newer
// complete one was written), always keeping the newest complete one before
// key, and the files of builds that never completed.
func (c *Collection) prune(key string) {
	ents, err := os.ReadDir(c.snapDir)
	if err != nil {
		return
	}
	type snap struct {
		key string
		mod time.Time
	}
	var done []snap // complete snapshots other than key
	for _, e := range ents {
		k, ok := strings.CutSuffix(e.Name(), ".nt")
		if !ok || strings.Contains(k, ".chunk-") || k == key {
			continue
		}
		if fi, err := e.Info(); err == nil {
			done = append(done, snap{k, fi.ModTime()})
		}
	}
	slices.SortFunc(done, func(a, b snap) int { return a.mod.Compare(b.mod) })
	keep := map[string]bool{key: true}
	now := time.Now()
	for i, s := range done {
		if i == len(done)-1 {
			keep[s.key] = true // the newest before key
			break
		}
		if now.Sub(done[i+1].mod) < snapshotGrace {
			keep[s.key] = true
		}
	}
	for _, e := range ents {
		k, _, _ := strings.Cut(e.Name(), ".")
		if !keep[k] {
			os.Remove(filepath.Join(c.snapDir, e.Name()))
		}
	}
}

// writeFileAtomic writes name through a temporary file that is synced and
// renamed into place, so a crash leaves the old file or the new one.
func writeFileAtomic(name string, fill func(*bufio.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(name), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	bw := bufio.NewWriterSize(f, 256<<10)
	if err := fill(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}
