package readstore_test

import (
	"log"
	"net/http"

	"github.com/resourcesync-go/resourcesync/oai/provider"
	"github.com/resourcesync-go/resourcesync/oai/provider/readstore"
)

// An OAI-PMH endpoint over the state a publish keeps updating, as
// resourcesync oai serve offers it: the state is opened for each request
// only, so the publish beside it is never locked out.
func Example() {
	st, err := readstore.Open("/var/lib/rs/state", "default")
	if err != nil {
		log.Fatal(err)
	}
	c, err := provider.NewStoreCollection([]provider.StoreSet{{
		Name: "default", Dir: "/var/lib/rs/data", Store: st, Base: "https://data.example.org/",
	}})
	if err != nil {
		log.Fatal(err)
	}
	h, err := provider.New(c, provider.Config{BaseURL: "https://data.example.org/oai", RepositoryIdentifier: "data.example.org"})
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", h))
}
