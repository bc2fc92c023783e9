// Package webtest holds, for the tests of every server that negotiates
// between an HTML view and a machine representation (internal/web's
// WantsHTML), the default request headers of the HTTP clients a Source or
// an SDShare server meets: Java, .NET, Node, Python, Ruby, PHP, Go, curl,
// wget and libxml2, which must get the XML, Atom or JSON; and the
// navigations of Chromium and Firefox, which get the page, against their
// fetch() and XMLHttpRequest, which do not.
package webtest
