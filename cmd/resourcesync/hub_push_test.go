package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/wspush"
)

// TestHubPush: the standalone hub relays each published change
// notification over its live push, one activity per entry, to the
// subscribers of that topic only.
func TestHubPush(t *testing.T) {
	addr := freeAddr(t)
	base := "http://" + addr
	out, _ := background(t, "hub", "--addr", addr, "--state", t.TempDir())
	waitFor(t, "the hub", 20*time.Second, func() bool {
		r, err := http.Get(base + "/healthz")
		if err == nil {
			r.Body.Close()
		}
		return err == nil && r.StatusCode == 200
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topic := "http://127.0.0.1:9/.resourcesync/default/notifications"
	d, err := wspush.Subscribe(ctx, http.DefaultClient, base+"/push", topic)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	r, err := wspush.Dial(ctx, nil, d.ReceiveFrom)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	publish := func(topic, body string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/xml")
		req.Header.Add("Link", "<"+topic+`>; rel="self"`)
		req.Header.Add("Link", "<"+base+`/>; rel="hub"`)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("publish: %s", resp.Status)
		}
	}
	cn := func(loc, change string) string {
		return `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="change-notification" from="2026-11-29T08:00:00Z" until="2026-11-29T08:00:01Z"/>
<url><loc>` + loc + `</loc><rs:md change="` + change + `" datetime="2026-11-29T08:00:01Z" hash="md5:1e621df39e053ff6bc7db7bb1c616cc6" length="3"/></url>
</urlset>`
	}
	publish("http://127.0.0.1:9/.resourcesync/other/notifications", cn("http://127.0.0.1:9/other.txt", "created"))
	publish(topic, cn("http://127.0.0.1:9/a.txt", "updated"))
	a, err := r.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.Type != "Update" || a.Object.ID != "http://127.0.0.1:9/a.txt" || a.Object.Digest != "md5:1e621df39e053ff6bc7db7bb1c616cc6" || *a.Object.Size != 3 {
		t.Fatalf("got %+v %+v (the other topic's change must not come)", a, a.Object)
	}
}
