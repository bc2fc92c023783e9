package boltstore

// SetLoadHook sets testHookLoaded until the returned function restores it.
func SetLoadHook(f func(n int)) (restore func()) {
	old := testHookLoaded
	testHookLoaded = f
	return func() { testHookLoaded = old }
}
