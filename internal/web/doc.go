// Package web holds what every HTML view of the toolkit shares: the page
// layout and its one stylesheet (inlined, so that a page saved or published
// for static hosting stands alone), content negotiation between a browser
// and the machine clients that must keep getting XML, the security headers
// (a Content-Security-Policy that lets a page load nothing from anywhere:
// no script, no external asset), a server-rendered SVG bar chart and the
// formatting of sizes, counts and times.
//
// The views are plain HTML: no script, readable on a phone (a viewport meta
// tag and a layout that reflows), usable from the keyboard (a skip link,
// visible focus, real links and buttons).
package web
