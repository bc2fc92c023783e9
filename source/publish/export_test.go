package publish

// KeptCompanion is keptCompanion, for the external tests.
var KeptCompanion = keptCompanion

// RenderCompanions brings the companions of cfg.Out up to date from the
// documents alone (no stream), for the external tests.
func RenderCompanions(cfg Config) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	p := &publisher{cfg: cfg, log: cfg.Logger, now: cfg.Now().UTC()}
	return p.companions()
}

// SetPlainMaxURLs sets the URLs per plain sitemap part, for the tests; it
// returns a function that restores it.
func SetPlainMaxURLs(n int) func() {
	old := plainMaxURLs
	plainMaxURLs = n
	return func() { plainMaxURLs = old }
}
