package rs_test

import (
	"bytes"
	"fmt"
	"io"
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

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

func ExampleSplitter() {
	docs := map[string]*bytes.Buffer{}
	s, err := rs.NewSplitter(rs.SplitConfig{
		Head: rs.Head{
			MD:    rs.Metadata{Capability: rs.CapChangeList, From: rs.NewTime(time.Date(2013, 1, 2, 0, 0, 0, 0, time.UTC))},
			Links: []rs.Link{{Rel: rs.RelUp, Href: "http://example.com/capabilitylist.xml"}},
		},
		URL:        "http://example.com/changelist.xml",
		MaxEntries: 2, // rs.MaxEntries when zero
		Create: func(url string) (io.WriteCloser, error) {
			docs[url] = new(bytes.Buffer)
			return nopCloser{docs[url]}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	for i, change := range []rs.Change{rs.Created, rs.Updated, rs.Deleted} {
		err := s.Add(&rs.Entry{
			Loc: fmt.Sprintf("http://example.com/res%d", i+1),
			MD:  rs.Metadata{Change: change, DateTime: rs.NewTime(time.Date(2013, 1, 2, 10+i, 0, 0, 0, time.UTC))},
		})
		if err != nil {
			panic(err)
		}
	}
	res, err := s.Close()
	if err != nil {
		panic(err)
	}
	fmt.Println(res.URLs, res.Indexed, res.Parts, res.Entries)
	fmt.Print(docs["http://example.com/changelist-2.xml"])
	fmt.Print(docs["http://example.com/changelist.xml"])
	// Output:
	// [http://example.com/changelist-1.xml http://example.com/changelist-2.xml http://example.com/changelist.xml] true 2 3
	// <?xml version="1.0" encoding="UTF-8"?>
	// <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
	// <rs:md capability="changelist" from="2013-01-02T12:00:00Z"/>
	// <rs:ln rel="up" href="http://example.com/capabilitylist.xml"/>
	// <rs:ln rel="index" href="http://example.com/changelist.xml"/>
	// <url><loc>http://example.com/res3</loc><rs:md change="deleted" datetime="2013-01-02T12:00:00Z"/></url>
	// </urlset>
	// <?xml version="1.0" encoding="UTF-8"?>
	// <sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
	// <rs:md capability="changelist" from="2013-01-02T00:00:00Z"/>
	// <rs:ln rel="up" href="http://example.com/capabilitylist.xml"/>
	// <sitemap><loc>http://example.com/changelist-1.xml</loc><rs:md from="2013-01-02T00:00:00Z" until="2013-01-02T12:00:00Z"/></sitemap>
	// <sitemap><loc>http://example.com/changelist-2.xml</loc><rs:md from="2013-01-02T12:00:00Z"/></sitemap>
	// </sitemapindex>
}
