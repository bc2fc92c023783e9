package webtest

import "net/http"

// Client is one client's default request headers and whether a server
// answers it with the HTML view.
type Client struct {
	Name   string
	Header http.Header // canonical names; hop-by-hop ones left out
	HTML   bool
}

// Set sets c's headers on r (replacing any of the same name).
func (c Client) Set(r *http.Request) {
	for k, v := range c.Header {
		r.Header[k] = append([]string(nil), v...)
	}
}

// The Accept of a Java HttpURLConnection when the program sets none: Java
// 8 and earlier spell the wildcard twice, Java 17 once.
const (
	AcceptJava8  = "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2"
	AcceptJava17 = "text/html, image/gif, image/jpeg, */*; q=0.2"
)

// The Accept of a top-level navigation (Chromium's as Debian's Chromium
// 156 sends it, captured from a chromedp navigation; earlier versions
// lack image/jxl).
const (
	AcceptChromium = "text/html,application/xhtml+xml,application/xml;q=0.9,image/jxl,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
	AcceptFirefox  = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
)

func h(kv ...string) http.Header {
	out := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		out.Add(kv[i], kv[i+1])
	}
	return out
}

var (
	chromiumUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
	chromiumCH = []string{"Sec-Ch-Ua", `"Not:A-Brand";v="8", "Chromium";v="156"`, "Sec-Ch-Ua-Mobile", "?0", "Sec-Ch-Ua-Platform", `"Linux"`}
	firefoxUA  = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
)

func chromium(kv ...string) http.Header {
	return h(append(append([]string{"User-Agent", chromiumUA, "Accept-Language", "en-US,en;q=0.9"}, chromiumCH...), kv...)...)
}

func firefox(kv ...string) http.Header {
	return h(append([]string{"User-Agent", firefoxUA, "Accept-Language", "en-US,en;q=0.5"}, kv...)...)
}

// Clients are the default headers of the clients, as each sends them
// (Accept-Encoding left out: a test's Go client would then stop
// decompressing for itself; no server here compresses). Browsers send
// Fetch Metadata (Sec-Fetch-*) only to https and loopback origins: their
// requests to a plain-http host are listed apart.
var Clients = []Client{
	{"Java 8 HttpURLConnection", h("User-Agent", "Java/1.8.0_402", "Accept", AcceptJava8), false},
	{"Java 17 HttpURLConnection", h("User-Agent", "Java/17.0.10", "Accept", AcceptJava17), false},
	{"Java 11 HttpClient", h("User-Agent", "Java-http-client/11.0.22"), false},
	{"Apache HttpClient 4", h("User-Agent", "Apache-HttpClient/4.5.14 (Java/17.0.10)"), false},
	{"Apache HttpClient 5", h("User-Agent", "Apache-HttpClient/5.3.1 (Java/17.0.10)"), false},
	{".NET HttpClient", h(), false},
	{"Node fetch (undici)", h("Accept", "*/*", "Accept-Language", "*", "Sec-Fetch-Mode", "cors", "User-Agent", "node"), false},
	{"axios", h("Accept", "application/json, text/plain, */*", "User-Agent", "axios/1.7.9"), false},
	{"Ruby Net::HTTP", h("Accept", "*/*", "User-Agent", "Ruby"), false},
	{"PHP file_get_contents", h(), false},
	{"Go net/http", h("User-Agent", "Go-http-client/1.1"), false},
	{"Python requests", h("Accept", "*/*", "User-Agent", "python-requests/2.32.3"), false},
	{"Python urllib", h("User-Agent", "Python-urllib/3.12"), false},
	{"curl", h("Accept", "*/*", "User-Agent", "curl/8.11.1"), false},
	{"wget", h("Accept", "*/*", "User-Agent", "Wget/1.25.0"), false},
	{"libxml2", h(), false},

	{"Chromium navigation", chromium("Accept", AcceptChromium, "Sec-Fetch-Dest", "document", "Sec-Fetch-Mode", "navigate",
		"Sec-Fetch-Site", "none", "Sec-Fetch-User", "?1", "Upgrade-Insecure-Requests", "1"), true},
	{"Chromium link followed", chromium("Accept", AcceptChromium, "Sec-Fetch-Dest", "document", "Sec-Fetch-Mode", "navigate",
		"Sec-Fetch-Site", "same-origin", "Sec-Fetch-User", "?1", "Upgrade-Insecure-Requests", "1"), true},
	{"Chromium navigation, plain-http host", chromium("Accept", AcceptChromium, "Upgrade-Insecure-Requests", "1"), true},
	{"Chromium fetch()", chromium("Accept", "*/*", "Sec-Fetch-Dest", "empty", "Sec-Fetch-Mode", "cors", "Sec-Fetch-Site", "same-origin"), false},
	{"Chromium image", chromium("Accept", "image/jxl,image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8", "Sec-Fetch-Dest", "image", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Site", "same-origin"), false},
	{"Chromium XMLHttpRequest", chromium("Accept", "*/*", "Sec-Fetch-Dest", "empty", "Sec-Fetch-Mode", "cors", "Sec-Fetch-Site", "same-origin"), false},
	{"Chromium fetch() with Accept text/html", chromium("Accept", "text/html", "Sec-Fetch-Dest", "empty", "Sec-Fetch-Mode", "cors", "Sec-Fetch-Site", "same-origin"), false},
	{"Chromium fetch(), plain-http host", chromium("Accept", "*/*"), false},
	{"Firefox navigation", firefox("Accept", AcceptFirefox, "Upgrade-Insecure-Requests", "1", "Sec-Fetch-Dest", "document",
		"Sec-Fetch-Mode", "navigate", "Sec-Fetch-Site", "none", "Sec-Fetch-User", "?1", "Priority", "u=0, i"), true},
	{"Firefox navigation, plain-http host", firefox("Accept", AcceptFirefox, "Upgrade-Insecure-Requests", "1", "Priority", "u=0, i"), true},
	{"Firefox fetch()", firefox("Accept", "*/*", "Sec-Fetch-Dest", "empty", "Sec-Fetch-Mode", "cors", "Sec-Fetch-Site", "same-origin", "Priority", "u=4"), false},
	{"Firefox XMLHttpRequest", firefox("Accept", "*/*", "Sec-Fetch-Dest", "empty", "Sec-Fetch-Mode", "cors", "Sec-Fetch-Site", "same-origin"), false},
	{"Firefox fetch(), plain-http host", firefox("Accept", "*/*"), false},
}

// AcceptEncoding is the Accept-Encoding each client of Clients sends by
// default, by name; a client not listed sends none (Java's
// HttpURLConnection and HttpClient, .NET's HttpClient, PHP, curl without
// --compressed). A test sets it with a transport whose DisableCompression
// is on (net/http would otherwise add gzip and decode for itself), and
// decodes a gzip answer itself: Apache HttpClient, Node, axios, Ruby,
// Python requests, Go and the browsers accept gzip; urllib and wget ask
// for identity; libxml2's HTTP client (built with zlib) asks for gzip.
var AcceptEncoding = map[string]string{
	"Apache HttpClient 4":                    "gzip,deflate",
	"Apache HttpClient 5":                    "gzip, x-gzip, deflate",
	"Node fetch (undici)":                    "gzip, deflate, br",
	"axios":                                  "gzip, compress, deflate, br",
	"Ruby Net::HTTP":                         "gzip;q=1.0,deflate;q=0.6,identity;q=0.3",
	"Go net/http":                            "gzip",
	"Python requests":                        "gzip, deflate",
	"Python urllib":                          "identity",
	"wget":                                   "identity",
	"libxml2":                                "gzip",
	"Chromium navigation":                    "gzip, deflate, br, zstd",
	"Chromium link followed":                 "gzip, deflate, br, zstd",
	"Chromium navigation, plain-http host":   "gzip, deflate",
	"Chromium fetch()":                       "gzip, deflate, br, zstd",
	"Chromium image":                         "gzip, deflate, br, zstd",
	"Chromium XMLHttpRequest":                "gzip, deflate, br, zstd",
	"Chromium fetch() with Accept text/html": "gzip, deflate, br, zstd",
	"Chromium fetch(), plain-http host":      "gzip, deflate",
	"Firefox navigation":                     "gzip, deflate, br, zstd",
	"Firefox navigation, plain-http host":    "gzip, deflate",
	"Firefox fetch()":                        "gzip, deflate, br, zstd",
	"Firefox XMLHttpRequest":                 "gzip, deflate, br, zstd",
	"Firefox fetch(), plain-http host":       "gzip, deflate",
}
