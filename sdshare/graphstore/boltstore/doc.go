// Package boltstore is the embedded, durable graphstore.Store: named RDF
// graphs in one bbolt file, written with fsync per commit, so that a kill
// -9 at any moment leaves every graph as before or as after the write that
// was running.
//
// # Layout
//
// A client keeps its store in a directory; the file is PathIn(dir),
// dir/graph.db. Inside it, top-level buckets:
//
//	meta    "version" → 4-byte format version; "next" → 8-byte counter of
//	        node numbers; "graph" → 8-byte counter of internal graph ids
//	t2i     term key → 8-byte node id (the term dictionary)
//	i2t     8-byte node id → term encoding
//	rc      8-byte node id → uvarint reference count: how many index keys,
//	        over all graphs and positions, name the term
//	graphs  graph name (IRI) → 8-byte internal graph id
//	data    8-byte internal graph id → bucket of index keys s|p|o: s and
//	        p 8-byte big-endian node ids, o either 0x00 + 8-byte node id
//	        or 0x01 + the encoding of a literal of at most maxInline
//	        bytes; empty values
//	tmp     8-byte internal graph id → bucket of blank node label → node
//	        id, while a ReplaceGraph of that graph id runs
//
// Short literals are kept in the keys, not in the dictionary: most
// distinct terms of real data are literals used once, and inline they
// cost no dictionary entry, lookup or reference count (a third less CPU
// and a smaller file in TestLoadMemory). Node ids are n<<1 for dictionary
// terms (IRIs, long literals) and n<<1|1 for
// blank nodes, n from one counter. A blank node has no dictionary entry: it
// is its id, written out as _:b<n>. So every blank node a call inserts is
// fresh, and a label of Triples or Fragment is stable while the store is.
//
// A term's encoding is 'I' + IRI, or 'L' + uvarint length + datatype +
// uvarint length + language + lexical form. Its dictionary key is the
// encoding, or 'H' + SHA-256 of it when the encoding is longer than
// maxKeyLen (bbolt keys are limited, and short keys keep the tree shallow).
// Reference counts let ApplyFragment drop a term the moment no triple uses
// it, so a long-running client whose literals change does not grow the
// dictionary without bound.
//
// # One index, and why
//
// The only triple index is SPO per graph. Everything the contract asks —
// a resource's statements and the blank nodes they reach (SD-SRV-26), a
// whole graph in order — is a prefix scan of it. An OSP index (what refers
// to a node) would double every write and the file for a query nothing
// makes; Check verifies the dictionary against SPO instead.
//
// # Writes
//
// ApplyFragment is one transaction, and ApplyFragments
// (graphstore.BatchApplier) one for a whole batch: a commit costs an
// fsync whatever it holds, so a client applying a page of fragments in
// one is over ten times faster than with one commit each
// (BenchmarkApplyFragments). The batch sums its reference count changes
// and writes them once; a term one fragment adds and a later one drops
// never reaches the dictionary. ReplaceGraph writes the snapshot under
// a new internal graph id in transactions of at most Options.BatchSize
// triples, keeping the snapshot's blank node labels in the tmp bucket (not
// in memory), then points the name at the new id in one final transaction
// and deletes the old id's keys in batches. Before any of that, the
// snapshot is spooled whole to a temporary file next to the store (about
// its N-Triples size; spool.go): a snapshot refused part way (an endless
// one, stopped at the client's MaxSnapshotBytes) never reaches the file,
// which bbolt would never shrink again (a 100 MiB cap left it 801 MB
// larger), and the spool is deleted at once. A graph id no name points to
// is garbage: Open deletes such leftovers of a crashed ReplaceGraph, and
// clears tmp. Each transaction sorts its keys before it writes them
// (bbolt splits nodes only at commit, so unsorted inserts into a large
// transaction cost a copy each).
//
// # Memory
//
// A commit holds every B-tree node it touched in memory and rewrites its
// page. The dictionary is keyed by term, so a batch's lookups and inserts
// land all over it, and the more terms the store holds, the more nodes a
// batch of the same size touches. ReplaceGraph therefore sizes its batches
// by the nodes the previous one touched (maxNodes), which keeps its memory
// flat as the store grows (TestLoadMemory: 100k and 1M triples). On Linux
// it also drops the pages of the memory map it read from its resident set
// after each batch (release_linux.go): they are page cache, but would
// otherwise count towards the process's RSS and grow with the file.
//
// The price of a dictionary keyed by term is write amplification: loads
// run at tens of thousands of triples per second (BenchmarkLoad), not
// hundreds of thousands. Collecting unused terms by mark-and-sweep instead
// of reference counts would remove most of the remaining random writes;
// that is not done yet.
//
// # Reads
//
// Triples holds one bbolt read transaction for the whole loop (a real
// snapshot); a write that must grow the file waits for it, so the loop
// body must not wait for a write, as the contract says.
package boltstore
