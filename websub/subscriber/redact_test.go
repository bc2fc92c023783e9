package subscriber

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// TestErrorsRedacted: the errors of Discover, New and Subscribe carry no
// credential of a URL (a userinfo password, a token in a query), so that
// a program logging them leaks nothing; errors.Is and errors.As still
// see through. Before, a token in the hub's or the topic's query was in
// them, and a topic's password in Discover's 404.
func TestErrorsRedacted(t *testing.T) {
	const secret = "s3cr3t-pw"
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	c, _ := testnet.Client(t)
	ctx := context.Background()
	check := func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("no error")
		}
		for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err)} {
			if strings.Contains(s, secret) {
				t.Errorf("holds the secret: %s", s)
			}
		}
	}
	t.Run("discover 404", func(t *testing.T) {
		_, err := Discover(ctx, c, "http://user:"+secret+"@"+host+"/topic")
		check(t, err)
		var se *httperr.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusNotFound {
			t.Errorf("errors.As(%v, *StatusError) lost", err)
		}
	})
	t.Run("discover refused", func(t *testing.T) {
		_, err := Discover(ctx, c, "http://"+closed+"/topic?token="+secret)
		check(t, err)
	})
	t.Run("new with a bad topic", func(t *testing.T) {
		_, err := New(Config{Hub: srv.URL, Topic: "ftp://user:" + secret + "@" + host + "/t", CallbackURL: "http://127.0.0.1:1/cb", Client: c})
		check(t, err)
	})
	t.Run("subscribe, hub refused", func(t *testing.T) {
		s, err := New(Config{Hub: "http://" + closed + "/hub?token=" + secret, Topic: testTopic, CallbackURL: "http://127.0.0.1:1/cb", Client: c})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		check(t, s.Subscribe(ctx))
	})
}
