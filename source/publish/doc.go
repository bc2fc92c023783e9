// Package publish writes a ResourceSync Source's documents as a static
// tree of files, from the state (inventory, change journal and meta) that
// package source/scan keeps in a store.Store for each set of resources.
//
// # Layout
//
// Paths are relative to Config.Out; a document's URL is Config.BaseURL
// followed by the same path. <set> is a Set's Name.
//
//	.well-known/resourcesync                      Source Description: one entry per set's Capability List
//	robots.txt                                    a Sitemap line per set's Resource List (see below)
//	.resourcesync/robots.txt                      the same, always written
//	.resourcesync/<set>/capabilitylist.xml        Capability List (up → Source Description)
//	.resourcesync/<set>/resourcelist.xml          Resource List, or Resource List Index when split
//	.resourcesync/<set>/resourcelists/parts/<at>-00001.xml  parts of the split Resource List
//	.resourcesync/<set>/resourcelists/<at>/resourcelist.xml the list or index of a generation (Config.Archives)
//	.resourcesync/<set>/resourcelist-archive.xml  Resource List Archive (Config.Archives)
//	.resourcesync/<set>/changelist.xml            Change List Index (always an index; the Capability List names the open list instead with Config.OpenChangeList)
//	.resourcesync/<set>/changelists/<from>-<seq>.xml        Change Lists, closed and open
//	.resourcesync/<set>/changelist-archive.xml    Change List Archive (Config.Archives)
//	.resourcesync/<set>/resourcedump.xml          Resource Dump (Config.Dumps)
//	.resourcesync/<set>/resourcedumps/<at>/part-00001.zip            its packages
//	.resourcesync/<set>/resourcedumps/<at>/part-00001.manifest.xml   copies of their manifests (rel="contents")
//	.resourcesync/<set>/changedump.xml            Change Dump (Config.Dumps)
//	.resourcesync/<set>/changedumps/<from>-<seq>.zip           one package per closed Change List
//	.resourcesync/<set>/changedumps/<from>-<seq>.manifest.xml  copy of its manifest
//	.resourcesync/<set>/resourcedumps/<at>/resourcedump.xml    a generation's own Resource Dump (Archives)
//	.resourcesync/<set>/resourcedump-archive.xml  Resource Dump Archive (Archives, written Dumps)
//	.resourcesync/<set>/changedumps/<from>-<seq>.changedump.xml  a Change Dump of one package (Archives)
//	.resourcesync/<set>/changedump-archive.xml    Change Dump Archive (Archives, written Dumps)
//	.resourcesync/<set>/feed/collection.json      IIIF Change Discovery 1.0 collection (Config.Feeds; see package feed)
//	.resourcesync/<set>/feed/page-<n>.json        its pages
//	.resourcesync/<set>/feed/ldes.ttl             the LDES event stream; view.ttl, seg-<k>.ttl, ldes-<n>.ttl its nodes
//	.resourcesync/sitemap.xml                     plain sitemap index (Config.PlainSitemap)
//	.resourcesync/<set>/sitemap/part-<n>.xml      plain sitemaps of the set's resources
//
// With Config.GzipLists (serve's own tree, never a static OUT) the
// Resource List, single or each part, and its archived generations are
// stored as NAME.xml.gz in place of NAME.xml (the index of parts stays
// plain); source/server answers NAME.xml from it.
//
// Beside every document NAME.xml (and the Source Description) is its HTML
// companion NAME.html, a page to read it in a browser (NAME.2.html, … for
// each further 1,000 entries), unless Config.NoCompanions; see
// companion.go. They are built from the entries while the documents are
// written (not parsed back) and rewritten only when a document's bytes
// change.
//
// <at> and <from> are UTC times written 20060102T150405.000000000Z; <seq>
// is the journal sequence number of the list's first record (two lists
// split by count may share a from). A resource's URL is Set.ResourceBase
// followed by scan.EscapePath of its path; an HTTP server serves the
// resources themselves.
//
// robots.txt at the root of Out is written only if it is absent or was
// written by Publish (its first line is a marker); a user's robots.txt is
// kept and a warning logged, and a server can serve .resourcesync/robots.txt
// in its place.
//
// # Documents
//
// Every Resource List, Change List and manifest entry carries loc, lastmod,
// length, type and md5 + sha-256 hashes; Change List and Change Dump
// Manifest entries also carry change and datetime (deleted entries keep the
// last known metadata). Documents are streamed through rs.Encoder from
// paged reads of the store: memory does not grow with the inventory or the
// journal (one dump package's inventory records, at most MaxEntries, are
// held in memory, and the zip writer's directory of that package).
//
// # Resource List
//
// The Resource List is rewritten only when the collection changed since
// the published one: every change after the baseline is a journal record,
// so the journal's last seq, the baseline and the inventory's count
// (kept in the store's meta) tell, without a pass over the inventory.
// Stat-only updates (touches) change no published field.
//
// Up to MaxEntries resources it is one document, written whole. Beyond, it
// is a Resource List Index of parts by key range: the meta keeps a part
// table (each part's first path, entry count, file name and at). An update
// reads the journal records since the published list, marks the parts
// whose range holds one of their paths, and rewrites only those, reading
// just their range of the inventory (store.ResourcesIn), under new file
// names: a part that outgrows MaxEntries is split in even halves, a run of
// changed parts that shrinks below a quarter of MaxEntries is merged with
// a neighbour when the two fit in three quarters, an emptied part leaves
// the table. Then the index is written with the run's time as at: an
// unchanged part was accurate when written and still is (no record touched
// its range), so the whole list is accurate at the index's at; each
// index entry (and part) carries its own part's at. A full write (parts
// filled to MaxEntries) is done instead when there is no part table (a
// first run, or a state published by an older version), the settings or
// the baseline changed, the journal no longer reaches back to the
// published list, more than half of the parts changed, the list fits one
// document again, or the published resourcelist.xml is not the one the
// meta describes (a killed run). Memory holds one flag per part, never a
// set of paths.
//
// Every part's rel="index" names resourcelist.xml, which the Capability
// List names. With Config.Archives, every list or index is also written as
// resourcelists/<at>/resourcelist.xml (resourcelist.xml is a hard link to
// the current one, one copy on disk under two names, or a byte copy where
// the file system has no hard links; neither name is ever written in
// place), and the Resource List Archive names the previous
// ArchivedResourceLists generations, which are kept with the parts they
// name; older ones are removed. Parts are shared by the generations that
// name them, so a part of an archived index has its rel="index" at the
// current list (validators warn, RS-REL-2). Part files named by no kept
// index are removed once the Capability List is rewritten.
//
// # Change Lists
//
// The boundaries of the Change Lists are kept in the store's meta, so that
// every run agrees with the previous ones. The first list starts at the
// datetime of the first journal record (or at the first run, if the journal
// is empty). The open list closes at the first multiple of
// ChangeListPeriod since the Unix epoch after the datetime of its first
// record, once the journal holds a record at or after that boundary or Now
// is past it by a grace of a tenth of the period (at most a minute, for a
// record stamped before the boundary and committed just after it); a list that holds MaxEntries records
// closes early, at the datetime of the next record. A list with no record
// never closes (an idle Source does not produce empty lists). The next list
// starts where the closed one ends, so from/until are contiguous; since a
// record at the boundary datetime can be in either list when the list was
// split by count, intervals are inclusive at both ends (RS-AMB-5). The
// open list keeps its URL when it closes. A closed list is written once;
// it is written again only if its file is missing, from the same journal
// records, so with the same bytes.
//
// The Change List Index names the most recent 50,000 lists; the Change
// List Archive (Config.Archives) names the closed ones (the most recent
// 50,000). Closed Change Lists are never deleted.
//
// # Dumps
//
// A Resource Dump is written when there is none, or when the collection
// changed since the last one (the same journal seq, baseline and count as
// for the Resource List) and that one is at least DumpInterval (default
// 24h) old; the Change Dumps carry the changes in between. It is a full
// copy of the collection: a set of ZIP packages
// (entries stored, not compressed; ZIP64 where needed, by archive/zip) of
// at most MaxEntries and 10,000 resources (a package's records are held in
// memory until it is complete) and DumpPartBytes bytes of resources each
// (one larger resource makes a package alone), each starting with
// manifest.xml (a resourcedump-manifest, paths /resources/<escaped path>),
// a copy of which is written next to the package and linked with
// rel="contents"; the dump entry of a package carries its length and
// sha-256 (no md5: it is the slowest hash and nothing needs it). A
// package is written in one pass: manifest.xml first (from the inventory
// records, teed into the manifest copy), then each resource's bytes, read
// once from Set.Dir (or Set.Content, a bucket) and verified against the inventory's length and
// sha-256 while being copied into the package (no temporary ZIP, no
// deflate: small files and already-compressed media gain little, and
// deflate would dominate the cost). A file that cannot be read or no
// longer matches is left out of the package and its manifest, with a log
// line (the next scan records its change): the package is then written
// again without it (rare; the others are only verified once one fails).
//
// A Change Dump package is written for each closed Change List, once:
// a changedump-manifest with the list's from and until and one entry per
// journal record, in journal order, with paths /changes/<seq>/<escaped
// path>. Limitation: the Source keeps no old versions, so the bitstream of
// a created or updated record is the resource's current bytes, and only
// when their sha-256 equals the record's; otherwise (the resource changed
// again later, or is gone) the record is left out of the package and its
// manifest with a log line. Its later state is in a later package.
//
// Disk: the Resource Dump costs a copy of the collection (plus about 350
// bytes of manifest per resource, twice: in the package and its copy),
// and while a new one is written the previous one is kept until the
// Resource Dump document names the new one; the Change Dump packages hold
// the changed bytes of every closed Change List and are kept as long as
// the Change Dump lists them (always).
//
// # Dump archives
//
// With Archives and written dumps, the Resource Dump Archive names the
// previous ArchivedResourceDumps Resource Dumps (at, completed), each
// by its generation's own copy of the document (resourcedump.xml is a
// hard link to the current one, as for the Resource List); their
// generation directories are kept, older ones removed after the archive
// no longer names them. Disk: each kept dump is a copy of the
// collection. The Change Dump Archive names, chronologically, a Change
// Dump per package (from, until of its Change List), written once beside
// the package; the packages are never removed, so it costs a small
// document each. Dumps on demand are not archived: their packages are
// plans of the current collection (an earlier plan's packages answer 404
// once it changed), so there is no earlier dump to list.
//
// # Dumps on demand
//
// With Config.DumpsOnDemand no package is written: Publish plans the same
// packages (its record in the meta holds each Resource Dump package's
// first path, entry count, length and the sha-256 of its manifest; each
// Change Dump package's journal records), reading the inventory and the
// journal but no file, and writes the dump documents, whose package
// entries carry the exact length and no package hash (it would take
// reading every file; each bitstream's hashes are in the manifest).
// Dumps.Serve produces a package when it is requested: the manifest from
// the inventory (a package whose manifest digest is no longer the planned
// one answers 404: the collection changed since, and a Destination falls
// back to the Resource List), then each member streamed from Set.Dir, in
// the layout archive/zip's Writer gives the same members (stored, a data
// descriptor after each member), so the package is byte for byte the one
// the written dump would hold, and the same on every request: Range
// requests (resumed downloads) are served by seeking into the right
// member. Each file is checked against the inventory's length and sha-256
// (a small one whole before any of its bytes is sent, a larger one by its
// end); a file that changed aborts the response, so a client sees a broken
// download, never a whole one with wrong bytes. CRC-32s learnt while
// streaming are cached in memory (4 bytes a member); a range that starts
// late reads the files before it only for their CRC-32s when it reaches a
// data descriptor or the central directory. A Resource Dump is planned
// again when the collection changed and the plan is a minute old
// (DumpInterval applies to written dumps); a Change Dump package is
// planned once per closed Change List and holds a record's bytes only
// while the resource still has them: once it changes again the package's
// manifest changes, so the next Publish drops it from the Change Dump (it
// is then 404; its Change List stays). Only the packages holding a path
// changed since the last Publish are checked, from the journal and the
// inventory (no file is read).
//
// # Crash safety
//
// Every file is written under a temporary name (".tmp-…") in its final
// directory, fsynced, renamed into place and its directory fsynced, so a
// reader sees an old file or a complete new one. Files are written leaves
// first: Resource List parts (under names no document uses yet) before
// the index that names them, dump
// packages and manifest copies before the dump document, Change Lists
// before the Change List Index, all of a set's documents before its
// Capability List, and the Capability Lists before the Source Description.
// New packages go to a new generation directory, new parts to new file
// names; older generations and parts no kept index names are removed only
// after the documents naming the new ones are in place (and after the
// Capability List is rewritten). Closed Change
// Lists and Change Dump packages are never removed. So at every moment,
// also after kill -9, every document reachable from the Source Description
// exists and is complete.
//
// The store's meta and the files are kept in step so that the next run
// redoes exactly what a crash interrupted: Change List boundaries are
// committed before the lists are written (a rerun writes the same lists);
// a Resource Dump's record is committed before its document, and a run
// that finds the dump unchanged rewrites the document from the record
// before removing other generations; the Resource List's record (committed
// after the files) holds the part table and the sha-256 of
// resourcelist.xml, and the list is considered unchanged, or updated part
// by part, only if the published file still has it (else a full write). Each run
// first removes the temporary files a killed run left.
//
// Runs that write to one Out must not overlap: Publish serialises the
// calls in one process that name the same Out; across processes the
// store's own lock (package bolt takes an exclusive flock) keeps two
// publishers of one set apart. Each store should be published to one Out
// only (its meta records what that tree holds), except with Replicas.
//
// # Replicas
//
// With Config.Replicas the store is shared by several processes (Source
// replicas behind one base URL), each writing its own Out; one of them,
// the holder of the set's scanner role, runs Publish, the others render
// (Set.Follow). Everything in a document that the clock or the process
// decides is already in the meta: the Resource List's at, part table and
// the sha-256 of resourcelist.xml; the Change List boundaries. Replicas
// adds what a render still needs: each part's sha-256 (rlPart.SHA) and
// the open Change List's last record (clState.OpenLast). A render writes
// nothing to the store and uses no clock:
//
//   - a Resource List part missing from this Out is rendered from its key
//     range of the inventory and renamed into place only if its sha-256 is
//     the recorded one; the index (or the single list) likewise against
//     the recorded sha-256. If the inventory has moved on since the
//     leader's Publish (its next scan committed), a part does not match:
//     the set's Resource List is left as it was, SetReport.Behind is set,
//     and the caller renders again after the leader's next Publish. Parts
//     already rendered are kept (part names are never reused);
//   - closed Change Lists are rendered from the journal (records never
//     change) unless this Out is known to hold them closed; the open list
//     holds the records Open.First..OpenLast; the index follows the meta;
//   - the Capability List, the Source Description and robots.txt depend
//     on the Config only (which must be the same on every replica).
//
// A render of a set whose two meta values are those this process last
// published or rendered into this Out does nothing. A leader's Publish
// rewrites a closed list its own Out holds in open form even when the
// meta's Final says it was written (by another replica, into its Out).
// Dumps and Archives are off with Replicas: a dump package's bytes and
// an archived generation exist only in the Out that wrote them.
package publish
