package hub_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub"
)

// Run a WebSub hub, subscribe a callback to a topic and publish to it:
// the hub verifies the subscriber's intent (a GET with hub.challenge),
// then delivers every notification published on the topic, stored first,
// in order, retried until the callback takes it.
func ExampleOpen() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	state, err := os.MkdirTemp("", "hub")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(state)

	h, err := hub.Open(hub.Config{
		StateDir:              state, // hub.db: subscriptions, topic logs, cursors
		AllowPrivateCallbacks: true,  // the callback below is on 127.0.0.1
	})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	hubSrv := httptest.NewServer(h)
	defer hubSrv.Close()
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }() // verification and delivery workers

	// The subscriber's callback: it confirms the subscription and
	// receives the notifications.
	verified, delivered := make(chan string, 1), make(chan string, 1)
	callback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			q := r.URL.Query()
			io.WriteString(w, q.Get("hub.challenge"))
			verified <- q.Get("hub.mode")
			return
		}
		b, _ := io.ReadAll(r.Body)
		delivered <- string(b)
	}))
	defer callback.Close()

	topic := "https://source.example.org/.resourcesync/default/notifications"
	resp, err := http.PostForm(hubSrv.URL, url.Values{
		"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {callback.URL + "/cb"},
	})
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("subscribe:", resp.StatusCode)
	fmt.Println("verified:", wait(verified))
	// The subscription is active once the hub has recorded the answer;
	// it receives what is published from then on.
	for {
		n, err := h.CountSubscriptions(ctx, topic)
		if err != nil {
			log.Fatal(err)
		}
		if n > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The embedded case publishes in-process; an external publisher POSTs.
	body := `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>`
	if _, err := h.Publish(ctx, topic, "application/xml", []byte(body), nil); err != nil {
		log.Fatal(err)
	}
	fmt.Println("delivered:", strings.HasPrefix(wait(delivered), "<urlset"))
	cancel()
	<-done
	// Output:
	// subscribe: 202
	// verified: subscribe
	// delivered: true
}

func wait(c chan string) string {
	select {
	case s := <-c:
		return s
	case <-time.After(time.Minute):
		log.Fatal("the hub did not call back")
		return ""
	}
}
