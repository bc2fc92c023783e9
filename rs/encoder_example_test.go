package rs_test

import (
	"os"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

func ExampleEncoder() {
	at := rs.NewTime(time.Date(2013, 1, 3, 9, 0, 0, 0, time.UTC))
	enc := rs.NewEncoder(os.Stdout)
	enc.WriteHead(&rs.Head{
		MD:    rs.Metadata{Capability: rs.CapResourceList, At: at},
		Links: []rs.Link{{Rel: rs.RelUp, Href: "http://example.com/dataset1/capabilitylist.xml"}},
	})
	enc.WriteEntry(&rs.Entry{
		Loc:     "http://example.com/res1",
		LastMod: rs.NewTime(time.Date(2013, 1, 2, 13, 0, 0, 0, time.UTC)),
		MD: rs.Metadata{
			Hashes:    rs.Hashes{{Alg: rs.MD5, Value: "1584abdf8ebdc9802ac0c6a7402c03b6"}},
			Length:    8876,
			HasLength: true,
			Type:      "text/html",
		},
	})
	if err := enc.Close(); err != nil {
		panic(err)
	}
	// Output:
	// <?xml version="1.0" encoding="UTF-8"?>
	// <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
	// <rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>
	// <rs:ln rel="up" href="http://example.com/dataset1/capabilitylist.xml"/>
	// <url><loc>http://example.com/res1</loc><lastmod>2013-01-02T13:00:00Z</lastmod><rs:md hash="md5:1584abdf8ebdc9802ac0c6a7402c03b6" length="8876" type="text/html"/></url>
	// </urlset>
}
