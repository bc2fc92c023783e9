package ldesgraph

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// positionFile names the file that keeps stream's position in dir.
func positionFile(dir, stream string) string {
	h := sha256.Sum256([]byte(stream))
	return filepath.Join(dir, "ldes-"+hex.EncodeToString(h[:8])+".json")
}

type positionDoc struct {
	Stream string `json:"stream"`
	Position
}

// LoadPosition reads the position kept for stream in dir (the zero
// Position when none is).
func LoadPosition(dir, stream string) (Position, error) {
	b, err := os.ReadFile(positionFile(dir, stream))
	if errors.Is(err, os.ErrNotExist) {
		return Position{}, nil
	}
	if err != nil {
		return Position{}, err
	}
	var d positionDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return Position{}, fmt.Errorf("%s: %w", positionFile(dir, stream), err)
	}
	if d.Stream != stream {
		return Position{}, nil // another stream's, by a hash collision: start afresh
	}
	return d.Position, nil
}

// SavePosition keeps pos for stream in dir, atomically and durably: a
// run killed at any point leaves the old position or the new one.
func SavePosition(dir, stream string, pos Position) error {
	b, err := json.Marshal(positionDoc{stream, pos})
	if err != nil {
		return err
	}
	p := positionFile(dir, stream)
	tmp := p + ".tmp-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666) // the umask applies
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // the rename's directory entry; not possible everywhere (Windows)
		d.Close()
	}
	return nil
}
