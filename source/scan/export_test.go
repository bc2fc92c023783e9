package scan

// SetBeforeHash installs a hook that runs in the hashing worker just before
// a file is read (for tests that change files during a scan).
func (s *Scanner) SetBeforeHash(f func(rel string)) { s.beforeHash = f }
