package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// maxPage caps Entries: a page of notifications is held in memory.
const maxPage = 256

// pruneStep bounds the rows one Prune call deletes.
const pruneStep = 10000

// appendSQL numbers and stores an entry in one statement (one round trip,
// its own transaction): the upsert of the topic's head row takes that
// row's lock until commit, so appends to one topic are serialized and the
// numbers have no gap; the entry commits with its number or neither does.
const appendSQL = `
WITH t AS (
	INSERT INTO hub_topics AS t (topic, head) VALUES ($1, 1)
	ON CONFLICT (topic) DO UPDATE SET head = t.head + 1
	RETURNING id, head
), e AS (
	INSERT INTO hub_entries (topic_id, seq, published, content_type, hub_url, links, body)
	SELECT id, head, $2, $3, $4, $5, $6 FROM t
)
SELECT t.head FROM t, (SELECT pg_notify('` + channel + `', $7)) n`

func (s *Store) Append(ctx context.Context, topic string, e hubstore.Entry) (uint64, error) {
	if topic == "" {
		return 0, invalid("empty topic")
	}
	if err := fits(topic, ""); err != nil {
		return 0, err
	}
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	body := e.Body
	if body == nil {
		body = []byte{}
	}
	var seq int64
	err := s.pool.QueryRow(ctx, appendSQL, b(topic), ts(e.Published), b(e.ContentType), b(e.HubURL), bl(e.Links), body,
		evPayload(hubstore.EventEntries)).Scan(&seq)
	if err != nil {
		return 0, wrap("append", err)
	}
	return uint64(seq), nil
}

func (s *Store) Head(ctx context.Context, topic string) (uint64, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	var head int64
	err := s.pool.QueryRow(ctx, `SELECT head FROM hub_topics WHERE topic = $1`, b(topic)).Scan(&head)
	if err == pgx.ErrNoRows {
		return 0, nil
	}
	return uint64(head), wrap("head", err)
}

func (s *Store) Heads(ctx context.Context) (map[string]uint64, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, _ := s.pool.Query(ctx, `SELECT topic, head FROM hub_topics`)
	out := map[string]uint64{}
	var topic string
	var head int64
	_, err := pgx.ForEachRow(rows, []any{str{&topic}, &head}, func() error {
		out[topic] = uint64(head)
		return nil
	})
	if err != nil {
		return nil, wrap("heads", err)
	}
	return out, nil
}

// Entries reads a keyset page: a range scan of hub_entries' primary key.
func (s *Store) Entries(ctx context.Context, topic string, after uint64, max int) ([]hubstore.Entry, error) {
	if max < 1 {
		return nil, invalid("max %d < 1", max)
	}
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if after >= 1<<63-1 {
		return nil, nil
	}
	rows, _ := s.pool.Query(ctx, `
SELECT e.seq, e.published, e.content_type, e.hub_url, e.links, e.body
FROM hub_entries e
WHERE e.topic_id = (SELECT id FROM hub_topics WHERE topic = $1) AND e.seq > $2
ORDER BY e.seq
LIMIT $3`, b(topic), int64(after), min(max, maxPage))
	var out []hubstore.Entry
	var (
		seq       int64
		published pgtype.Timestamptz
		links     [][]byte
		e         hubstore.Entry
	)
	_, err := pgx.ForEachRow(rows, []any{&seq, &published, str{&e.ContentType}, str{&e.HubURL}, &links, &e.Body}, func() error {
		e.Seq, e.Published, e.Links = uint64(seq), fromTS(published), fromBL(links)
		out = append(out, e)
		e = hubstore.Entry{}
		return nil
	})
	if err != nil {
		return nil, wrap("entries", err)
	}
	return out, nil
}

func (s *Store) Prune(ctx context.Context, topic string, below uint64) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	if below <= 1 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, fmt.Sprintf(`
DELETE FROM hub_entries
WHERE topic_id = (SELECT id FROM hub_topics WHERE topic = $1)
  AND seq < (SELECT min(seq) + %d FROM hub_entries WHERE topic_id = (SELECT id FROM hub_topics WHERE topic = $1))
  AND seq < $2`, pruneStep), b(topic), int64(min(below, 1<<63-1)))
	if err != nil {
		return 0, wrap("prune", err)
	}
	return int(tag.RowsAffected()), nil
}
