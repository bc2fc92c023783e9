package destination

// MirrorBase returns the base URL of the Source that DEST mirrors, as
// its state recorded it ("" when nothing was synced yet). It opens the
// state read-only and fails with ErrLocked while a run writes it.
func MirrorBase(dest string) (string, error) {
	st, err := openState(dest, true)
	if err != nil {
		return "", err
	}
	defer st.Close()
	return st.meta("base")
}
