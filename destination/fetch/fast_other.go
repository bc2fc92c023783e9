//go:build !linux

package fetch

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// Without openat2 every operation takes the portable path.

var (
	errNoFast       = errors.New("no fast path")
	errLinkAtName   = errors.New("symbolic link at the name")
	errExistsAtName = errors.New("something at the name")
)

func rawRoot(string, *os.Root) int { return -1 }

func closeRaw(int) {}

func (d *Dir) lstatFast(string, *Parents) (fs.FileInfo, error) { return nil, errNoFast }

type parentsState struct{}

func (c *Parents) close() {}

func (d *Dir) openFast(string) (*os.File, error) { return nil, errNoFast }

type fastTemp struct{}

func (d *Dir) createFast(string, *Parents) (*fastTemp, error) { return nil, errNoFast }

func (t *fastTemp) Write([]byte) (int, error)          { return 0, errNoFast }
func (t *fastTemp) finish(time.Time, bool, bool) error { return errNoFast }
func (t *fastTemp) release()                           {}
