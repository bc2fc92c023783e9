package pgdb

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		url     string
		o       Options
		max     int32
		appName string
	}{
		{"postgres://u@127.0.0.1/db", Options{}, 8, "resourcesync"},
		{"postgres://u@127.0.0.1/db", Options{DefaultMaxConns: 4}, 4, "resourcesync"},
		{"postgres://u@127.0.0.1/db?pool_max_conns=3", Options{DefaultMaxConns: 4}, 3, "resourcesync"},
		{"postgres://u@127.0.0.1/db?pool_max_conns=3", Options{MaxConns: 5}, 5, "resourcesync"},
		{"postgresql://u@127.0.0.1/db?application_name=mine", Options{KeepAlive: -1}, 8, "mine"},
		{"host=127.0.0.1 user=u dbname=db", Options{KeepAlive: time.Second}, 8, "resourcesync"},
	} {
		cfg, err := Config(tc.url, tc.o)
		if err != nil {
			t.Errorf("%q: %v", tc.url, err)
			continue
		}
		if cfg.MaxConns != tc.max || cfg.ConnConfig.RuntimeParams["application_name"] != tc.appName {
			t.Errorf("%q %+v: max %d, application_name %q", tc.url, tc.o, cfg.MaxConns, cfg.ConnConfig.RuntimeParams["application_name"])
		}
		if w := Where(cfg); !strings.HasPrefix(w, "127.0.0.1:5432/") {
			t.Errorf("%q: Where %q", tc.url, w)
		}
	}
}

// FuzzConfig: the error of an unparsable URL never shows its password
// (only parsing runs here: no connection is attempted).
func FuzzConfig(f *testing.F) {
	for _, s := range [][2]string{
		{"s3cret", "h:notaport"}, {"p%40ss", "h:1"}, {"pa:ss", "[::1"}, {"a b", "h:5432/db?sslmode=bogus"},
		{"x@y", "h"}, {"pw", "h:99999999"}, {"'q'", "h:1?connect_timeout=x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pw, rest string) {
		if strings.ContainsAny(pw, "/?#") {
			return
		}
		pw = "Zq9" + pw // a password that the rest of a message cannot spell by chance
		for _, raw := range []string{
			"postgres://user:" + pw + "@" + rest,
			"postgres://user:" + url.PathEscape(pw) + "@" + rest,
			"host=" + rest + " user=u password=" + pw,
			"host=" + rest + " user=u password='" + strings.ReplaceAll(pw, "'", `\'`) + "'",
		} {
			_, err := Config(raw, Options{})
			if err == nil {
				continue
			}
			if msg := err.Error(); strings.Contains(msg, pw) && !strings.Contains(rest, pw) {
				t.Fatalf("%q: message shows the password %q: %s", raw, pw, msg)
			}
		}
	})
}
