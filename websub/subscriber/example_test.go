package subscriber_test

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/websub/subscriber"
)

// A Destination subscribes to a Source's change notification channel,
// orders the notifications by interval and falls back to the Change Lists
// when one is missing or the hub is unreachable.
func Example() {
	var capabilityList []rs.Entry // decoded with rs.NewDecoder
	chans := subscriber.Channels(capabilityList)
	if len(chans) == 0 {
		return // no notifications: poll the Change Lists
	}
	seq := &subscriber.Sequencer[subscriber.Notification]{Wait: 30 * time.Second}
	apply := func(n subscriber.Notification) { /* apply n.Entries */ }
	catchUp := func(from, until rs.Time) { /* read the Change Lists for [from, until) */ }

	sub, err := subscriber.New(subscriber.Config{
		Hub:          chans[0].Hub,
		Topic:        chans[0].Topic,
		CallbackURL:  "https://destination.example.org/websub/4f1c9a0e7b2d",
		Secret:       subscriber.NewSecret(),
		LeaseSeconds: 10 * 24 * 3600,
		OnNotification: func(ctx context.Context, n subscriber.Notification) error {
			for _, st := range seq.Add(n.From(), n.Until(), n, time.Now()) {
				switch st.Kind {
				case subscriber.Apply, subscriber.ApplyOverlap:
					apply(st.Value)
				case subscriber.Gap:
					catchUp(st.From, st.Until)
				}
			}
			return nil
		},
		OnHubState: func(up bool, err error) {
			if !up {
				log.Printf("hub down (%v): polling the Change Lists", err)
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	http.Handle("/websub/4f1c9a0e7b2d", sub.Handler())
	go func() { _ = sub.Run(context.Background()) }()
}
