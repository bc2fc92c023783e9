package scan

import "os"

// SetBeforeHash installs a hook that runs in the hashing worker just before
// a file is read (for tests that change files during a scan).
func (s *Scanner) SetBeforeHash(f func(rel string)) { s.beforeHash = f }

// SetOpen makes the scanner open files to hash with open and call
// afterRead (if not nil) after each read, for fault injection.
func (s *Scanner) SetOpen(open func(name string) (*os.File, error), afterRead func(name string)) {
	s.openHook = func(name string) (hashFile, error) {
		f, err := open(name)
		if err != nil {
			return nil, err
		}
		return hookFile{osFile{f}, func() {
			if afterRead != nil {
				afterRead(name)
			}
		}}, nil
	}
}

type hookFile struct {
	osFile
	after func()
}

func (f hookFile) Read(b []byte) (int, error) {
	n, err := f.osFile.Read(b)
	f.after()
	return n, err
}
