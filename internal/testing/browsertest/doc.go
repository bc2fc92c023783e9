// Package browsertest drives Debian's Chromium, headless, from Go tests
// through the DevTools protocol (chromedp): the HTML views are checked in
// the browser their users have, not against a parser's idea of one.
//
// Every request the page makes is intercepted before it is sent: those to
// 127.0.0.1 (and data:) go ahead, any other is failed in the browser and
// recorded, so that a test never sends a packet elsewhere and can assert
// that a page stays on its origin (AssertSameOrigin). Chromium runs with a
// fresh profile and its background services (updates, sync, safe
// browsing, metrics) off; host names other than 127.0.0.1 and localhost do
// not resolve.
//
// Screenshots are checked to be real pictures (not one flat colour) and,
// when $BROWSERTEST_SCREENSHOTS names a directory, saved there: docs/guide-browser.md's
// pictures are made with
//
//	BROWSERTEST_SCREENSHOTS=$PWD/docs/screenshots go test ./...
package browsertest
