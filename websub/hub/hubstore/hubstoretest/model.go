package hubstoretest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// The model test is seeded: each run logs its seed, and
// HUBSTORETEST_SEED=N (or -hubstoretest.seed=N) replays one history.
var modelSeed = flag.Uint64("hubstoretest.seed", 0, "seed of the model-based test (0: from HUBSTORETEST_SEED or random)")

func seed(t *testing.T) uint64 {
	t.Helper()
	seed := *modelSeed
	if v := os.Getenv("HUBSTORETEST_SEED"); seed == 0 && v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("HUBSTORETEST_SEED=%q: %v", v, err)
		}
		seed = n
	}
	if seed == 0 {
		seed = rand.Uint64()>>1 + 1
	}
	t.Logf("seed %d (replay with HUBSTORETEST_SEED=%d)", seed, seed)
	return seed
}

var (
	modelTopics = []string{"https://a.example/", "https://b.example/feed?x=1", "https://c.example/é"}
	modelKeys   = []string{"k1", "k2", "k3", "k4", "k5", "k6"}
	modelHosts  = []string{"h1:80", "h2:443"}
)

// hubModel is the truth the store is compared with. Leases are long
// (modelTTL) so that no claim expires during a history: holders change
// only by Claim, Release and deletion.
type hubModel struct {
	heads   map[string]uint64
	entries map[string][]hubstore.Entry // per topic, in Seq order
	subs    map[string]hubstore.Subscription
	holder  map[string]string // subscription key -> node
	alive   map[string]bool
	jobs    map[uint64]hubstore.Job
	jobHold map[uint64]string
	lastJob uint64
	dead    map[uint64]hubstore.DeadLetter
	lastDL  uint64
}

const modelTTL = time.Hour

// runModel drives a random history through a (node "A") and b (node "B"):
// the same handle in Run, two handles on one state in RunCluster.
func runModel(t *testing.T, a, b hubstore.Store) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed(t), 0x4b0b))
	steps := 300
	if testing.Short() {
		steps = 80
	}
	m := &hubModel{heads: map[string]uint64{}, entries: map[string][]hubstore.Entry{}, subs: map[string]hubstore.Subscription{},
		holder: map[string]string{}, alive: map[string]bool{}, jobs: map[uint64]hubstore.Job{}, jobHold: map[uint64]string{},
		dead: map[uint64]hubstore.DeadLetter{}}
	nodes := []string{"A", "B"}
	handle := map[string]hubstore.Store{"A": a, "B": b}
	now := t0
	outcomes := map[string]int{} // how often each kind of step ran, by outcome: coverage
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	us := func() time.Time { return now.Add(time.Duration(rng.IntN(1e6)) * time.Microsecond) }
	randSub := func(key string) hubstore.Subscription {
		s := sub(key, pick(modelTopics))
		s.Secret = fmt.Sprintf("s%d", rng.IntN(100))
		s.Lease = int64(rng.IntN(10000))
		s.Expires = us()
		if rng.IntN(2) == 0 {
			s.Cursor, s.Attempt, s.LastError = uint64(rng.IntN(5)), rng.IntN(3), "err"
			s.FirstFail, s.NextAt = us(), us()
		}
		return s
	}
	fatal := func(step int, what string, args ...any) {
		t.Helper()
		t.Fatalf("step %d: %s", step, fmt.Sprintf(what, args...))
	}

	for step := range steps {
		now = now.Add(time.Duration(rng.IntN(3)) * time.Second)
		node := pick(nodes)
		s := handle[node]
		var desc string
		switch r := rng.IntN(100); {
		case r < 14:
			topic := pick(modelTopics)
			desc = "Append " + topic
			e := entry(fmt.Sprintf("body %d", rng.IntN(1000)))
			e.Published = us()
			if rng.IntN(3) == 0 {
				e.Links = nil
			}
			seq, err := s.Append(ctx, topic, e)
			if err != nil || seq != m.heads[topic]+1 {
				fatal(step, "%s = %d, %v; want %d", desc, seq, err, m.heads[topic]+1)
			}
			m.heads[topic] = seq
			e.Seq = seq
			m.entries[topic] = append(m.entries[topic], e)
		case r < 18:
			topic := pick(modelTopics)
			below := uint64(rng.IntN(int(m.heads[topic]) + 2))
			desc = fmt.Sprintf("Prune(%s, %d)", topic, below)
			want := 0
			for _, e := range m.entries[topic] {
				if e.Seq < below {
					want++
				}
			}
			got := 0
			for {
				n, err := s.Prune(ctx, topic, below)
				if err != nil {
					fatal(step, "%s: %v", desc, err)
				}
				if n == 0 {
					break
				}
				got += n
			}
			if got != want {
				fatal(step, "%s pruned %d, want %d", desc, got, want)
			}
			m.entries[topic] = slices.DeleteFunc(m.entries[topic], func(e hubstore.Entry) bool { return e.Seq < below })
		case r < 26:
			sb := randSub(pick(modelKeys))
			desc = "PutSubscription " + sb.Key
			if err := s.PutSubscription(ctx, sb); err != nil {
				fatal(step, "%s: %v", desc, err)
			}
			m.subs[sb.Key] = sb // claim untouched
		case r < 31:
			key := pick(modelKeys)
			desc = "DeleteSubscription " + key
			if err := s.DeleteSubscription(ctx, key); err != nil {
				fatal(step, "%s: %v", desc, err)
			}
			delete(m.subs, key)
			delete(m.holder, key)
		case r < 38:
			sb := randSub(pick(modelKeys))
			jobID := m.someJob(rng)
			maxPer := rng.IntN(3)
			desc = fmt.Sprintf("Subscribe(job %d, %s to %s, max %d)", jobID, sb.Key, sb.Topic, maxPer)
			got, err := s.Subscribe(ctx, jobID, sb, maxPer)
			m.deleteJob(jobID)
			want, exists := m.subs[sb.Key]
			var wantErr error
			switch {
			case exists:
				want.Topic, want.Callback, want.Secret, want.Lease, want.Expires = sb.Topic, sb.Callback, sb.Secret, sb.Lease, sb.Expires
			case maxPer > 0 && m.countSubs(sb.Topic) >= maxPer:
				wantErr = hubstore.ErrTopicFull
			default:
				want = hubstore.Subscription{Key: sb.Key, Topic: sb.Topic, Callback: sb.Callback, Secret: sb.Secret,
					Lease: sb.Lease, Expires: sb.Expires, Cursor: m.heads[sb.Topic]}
			}
			if wantErr != nil {
				if !errors.Is(err, wantErr) {
					fatal(step, "%s: %v, want %v", desc, err, wantErr)
				}
				outcomes["ErrTopicFull"]++
				break
			}
			if err != nil || !sameSub(got, want) {
				fatal(step, "%s = %+v, %v;\nwant %+v", desc, got, err, want)
			}
			m.subs[sb.Key] = want
		case r < 41:
			key, jobID := pick(modelKeys), m.someJob(rng)
			desc = fmt.Sprintf("Unsubscribe(job %d, %s)", jobID, key)
			if err := s.Unsubscribe(ctx, jobID, key); err != nil {
				fatal(step, "%s: %v", desc, err)
			}
			m.deleteJob(jobID)
			delete(m.subs, key)
			delete(m.holder, key)
		case r < 53:
			// Cursor updates by a random node: written for the keys it
			// holds, refused (fenced) for the others.
			var ups []hubstore.CursorUpdate
			var wantRefused []string
			for _, key := range modelKeys {
				if rng.IntN(3) > 0 {
					continue
				}
				u := hubstore.CursorUpdate{Key: key, Cursor: uint64(rng.IntN(8)), Attempt: rng.IntN(4), LastError: fmt.Sprint("e", rng.IntN(9))}
				if rng.IntN(2) == 0 {
					u.FirstFail, u.NextAt = us(), us()
				}
				ups = append(ups, u)
				if _, ok := m.subs[key]; !ok || m.holder[key] != node {
					wantRefused = append(wantRefused, key)
				}
			}
			desc = fmt.Sprintf("UpdateCursors(%s, %d updates)", node, len(ups))
			refused, err := s.UpdateCursors(ctx, node, ups)
			slices.Sort(refused)
			if err != nil || !slices.Equal(refused, wantRefused) {
				fatal(step, "%s: refused %q, %v; want %q (holders %v)", desc, refused, err, wantRefused, m.holder)
			}
			for _, u := range ups {
				if !slices.Contains(wantRefused, u.Key) {
					m.subs[u.Key] = applyUpdate(m.subs[u.Key], u)
					outcomes["cursor written"]++
				}
			}
			outcomes["cursor refused"] += len(wantRefused)
		case r < 63:
			max := rng.IntN(4)
			desc = fmt.Sprintf("Claim(%s, %d)", node, max)
			c, err := s.Claim(ctx, node, modelTTL, max)
			if err != nil {
				fatal(step, "%s: %v", desc, err)
			}
			m.alive[node] = true
			var unheld []string
			for _, k := range slices.Sorted(maps.Keys(m.subs)) {
				if _, ok := m.holder[k]; !ok {
					unheld = append(unheld, k)
				}
			}
			taken := 0
			for i, h := range c.Held {
				if i > 0 && c.Held[i-1].Key >= h.Key {
					fatal(step, "%s: Held not in Key order: %q", desc, keysOf(c.Held))
				}
				switch w, ok := m.subs[h.Key]; {
				case !ok:
					fatal(step, "%s: holds %q, which does not exist", desc, h.Key)
				case m.holder[h.Key] != node && m.holder[h.Key] != "":
					fatal(step, "%s: takes %q, held by %s", desc, h.Key, m.holder[h.Key])
				case !sameSub(h, w):
					fatal(step, "%s: holds %+v;\nwant %+v", desc, h, w)
				}
				if m.holder[h.Key] == "" {
					taken++
				}
			}
			for k, n := range m.holder {
				if n == node && !slices.ContainsFunc(c.Held, func(h hubstore.Subscription) bool { return h.Key == k }) {
					fatal(step, "%s: lost %q without release", desc, k)
				}
			}
			if taken != min(max, len(unheld)) {
				fatal(step, "%s: took %d of %d unheld, want %d", desc, taken, len(unheld), min(max, len(unheld)))
			}
			for _, h := range c.Held {
				m.holder[h.Key] = node
			}
			outcomes["claims taken"] += taken
			if c.Nodes != len(m.alive) || c.Subscriptions != len(m.subs) {
				fatal(step, "%s: %d nodes, %d subscriptions; want %d, %d", desc, c.Nodes, c.Subscriptions, len(m.alive), len(m.subs))
			}
		case r < 68:
			var keys []string
			all := rng.IntN(4) == 0
			if !all {
				for _, k := range modelKeys {
					if rng.IntN(3) == 0 {
						keys = append(keys, k)
					}
				}
				if len(keys) == 0 {
					keys = []string{pick(modelKeys)}
				}
			}
			desc = fmt.Sprintf("Release(%s, %q)", node, keys)
			if err := s.Release(ctx, node, keys...); err != nil {
				fatal(step, "%s: %v", desc, err)
			}
			for k, n := range m.holder {
				if n == node && (all || slices.Contains(keys, k)) {
					delete(m.holder, k)
				}
			}
			if all {
				delete(m.alive, node)
				for id, n := range m.jobHold {
					if n == node {
						delete(m.jobHold, id)
					}
				}
			}
		case r < 75:
			j := hubstore.Job{Key: pick(modelKeys), Host: pick(modelHosts), Mode: "subscribe", Topic: pick(modelTopics),
				Callback: "https://cb.example/", Secret: "x", Lease: 60, VerifyToken: "tok", HasToken: rng.IntN(2) == 0,
				NextAt: now.Add(time.Duration(rng.IntN(5)-2) * time.Second)}
			maxTotal, maxPerHost := 0, 0
			if rng.IntN(3) == 0 {
				maxTotal, maxPerHost = 1+rng.IntN(8), 1+rng.IntN(4)
			}
			desc = fmt.Sprintf("AddJob(%s, %s, %d, %d)", j.Key, j.Host, maxTotal, maxPerHost)
			perHost := 0
			for _, o := range m.jobs {
				if o.Host == j.Host {
					perHost++
				}
			}
			got, err := s.AddJob(ctx, j, maxTotal, maxPerHost)
			if maxTotal > 0 && len(m.jobs) >= maxTotal || maxPerHost > 0 && perHost >= maxPerHost {
				if !errors.Is(err, hubstore.ErrTooManyJobs) {
					fatal(step, "%s = %+v, %v; want ErrTooManyJobs", desc, got, err)
				}
				outcomes["ErrTooManyJobs"]++
				break
			}
			if err != nil || got.ID <= m.lastJob {
				fatal(step, "%s = %+v, %v; want an ID > %d", desc, got, err, m.lastJob)
			}
			j.ID = got.ID
			if !sameJob(got, j) {
				fatal(step, "%s = %+v;\nwant %+v", desc, got, j)
			}
			m.lastJob = j.ID
			m.jobs[j.ID] = j
		case r < 78:
			id := m.someJob(rng)
			j, exists := m.jobs[id]
			if !exists {
				j.ID, j.Key = id, "k1"
			}
			j.Attempts++
			j.NextAt = now.Add(time.Duration(rng.IntN(5)-2) * time.Second)
			desc = fmt.Sprintf("UpdateJob(%d)", id)
			err := s.UpdateJob(ctx, j)
			if !exists {
				if !errors.Is(err, hubstore.ErrNotFound) {
					fatal(step, "%s: %v, want ErrNotFound", desc, err)
				}
				break
			}
			if err != nil {
				fatal(step, "%s: %v", desc, err)
			}
			m.jobs[id] = j
			delete(m.jobHold, id)
		case r < 81:
			id := m.someJob(rng)
			desc = fmt.Sprintf("DeleteJob(%d)", id)
			if err := s.DeleteJob(ctx, id); err != nil {
				fatal(step, "%s: %v", desc, err)
			}
			m.deleteJob(id)
		case r < 88:
			desc = fmt.Sprintf("ClaimJobs(%s)", node)
			wantDue, wantNext := m.dueJobs(node, now)
			due, next, err := s.ClaimJobs(ctx, node, now, modelTTL, 50)
			if err != nil || len(due) != len(wantDue) || !sameTime(next, wantNext) {
				fatal(step, "%s = %d jobs, next %v, %v; want %d, next %v", desc, len(due), next, err, len(wantDue), wantNext)
			}
			for i := range due {
				if !sameJob(due[i], wantDue[i]) {
					fatal(step, "%s: job %d = %+v;\nwant %+v", desc, i, due[i], wantDue[i])
				}
				m.jobHold[due[i].ID] = node
			}
			outcomes["jobs due"] += len(due)
		case r < 94:
			key := pick(modelKeys)
			if held := m.heldBy(node); len(held) > 0 && rng.IntN(3) > 0 {
				key = held[rng.IntN(len(held))] // mostly by the holder
			}
			u := hubstore.CursorUpdate{Key: key, Cursor: uint64(rng.IntN(8)), LastError: "gave up"}
			d := hubstore.DeadLetter{Topic: pick(modelTopics), Callback: "https://cb.example/" + key, Seq: uint64(rng.IntN(9)),
				Published: us(), ContentType: "text/plain", Body: []byte(fmt.Sprint(rng.IntN(100))), Attempts: rng.IntN(9),
				FirstFail: us(), LastError: "500", At: us()}
			desc = fmt.Sprintf("AddDeadLetter(%s, %s)", node, key)
			got, err := s.AddDeadLetter(ctx, node, d, u)
			if _, ok := m.subs[key]; !ok || m.holder[key] != node {
				if !errors.Is(err, hubstore.ErrNotHolder) {
					fatal(step, "%s = %+v, %v; want ErrNotHolder (holder %q)", desc, got, err, m.holder[key])
				}
				outcomes["dead letter refused"]++
				break
			}
			if err != nil || got.ID <= m.lastDL {
				fatal(step, "%s = %+v, %v; want an ID > %d", desc, got, err, m.lastDL)
			}
			d.ID = got.ID
			m.lastDL = d.ID
			m.dead[d.ID] = d
			outcomes["dead letter written"]++
			m.subs[key] = applyUpdate(m.subs[key], u)
		default:
			var id uint64
			if ids := slices.Sorted(maps.Keys(m.dead)); len(ids) > 0 && rng.IntN(4) > 0 {
				id = ids[rng.IntN(len(ids))]
			} else {
				id = m.lastDL + 1 + uint64(rng.IntN(3))
			}
			desc = fmt.Sprintf("DeleteDeadLetter(%d)", id)
			err := s.DeleteDeadLetter(ctx, id)
			if _, ok := m.dead[id]; !ok {
				if !errors.Is(err, hubstore.ErrNotFound) {
					fatal(step, "%s: %v, want ErrNotFound", desc, err)
				}
				break
			}
			if err != nil {
				fatal(step, "%s: %v", desc, err)
			}
			delete(m.dead, id)
		}
		if i := strings.IndexAny(desc, "( "); i > 0 {
			outcomes[desc[:i]]++
		}
		// Compare through both handles in turn.
		if err := compareHub(ctx, rng, handle[pick(nodes)], m); err != nil {
			t.Fatalf("step %d (%s by %s): %v", step, desc, node, err)
		}
	}
	t.Logf("steps by kind: %v", outcomes)
	t.Logf("%d steps: %d subscriptions (%d held), %d jobs, %d dead letters, heads %v",
		steps, len(m.subs), len(m.holder), len(m.jobs), len(m.dead), m.heads)
}

// someJob returns a pending job's ID, or sometimes one that does not exist.
func (m *hubModel) someJob(rng *rand.Rand) uint64 {
	ids := slices.Sorted(maps.Keys(m.jobs))
	if len(ids) == 0 || rng.IntN(4) == 0 {
		return m.lastJob + 1 + uint64(rng.IntN(3))
	}
	return ids[rng.IntN(len(ids))]
}

func (m *hubModel) heldBy(node string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m.holder)) {
		if m.holder[k] == node {
			out = append(out, k)
		}
	}
	return out
}

func (m *hubModel) deleteJob(id uint64) {
	delete(m.jobs, id)
	delete(m.jobHold, id)
}

func (m *hubModel) countSubs(topic string) int {
	n := 0
	for _, s := range m.subs {
		if s.Topic == topic {
			n++
		}
	}
	return n
}

// dueJobs is ClaimJobs by the contract: per Key the lowest-ID job, due
// and not held by another node; next is the earliest NextAt of the other
// lowest-ID jobs not held by another node.
func (m *hubModel) dueJobs(node string, now time.Time) (due []hubstore.Job, next time.Time) {
	lowest := map[string]hubstore.Job{}
	for _, j := range m.jobs {
		if l, ok := lowest[j.Key]; !ok || j.ID < l.ID {
			lowest[j.Key] = j
		}
	}
	for _, j := range lowest {
		if h := m.jobHold[j.ID]; h != "" && h != node {
			continue
		}
		if !j.NextAt.After(now) {
			due = append(due, j)
		} else if next.IsZero() || j.NextAt.Before(next) {
			next = j.NextAt
		}
	}
	slices.SortFunc(due, func(a, b hubstore.Job) int { return int(a.ID) - int(b.ID) })
	return due, next
}

func applyUpdate(s hubstore.Subscription, u hubstore.CursorUpdate) hubstore.Subscription {
	s.Cursor = max(s.Cursor, u.Cursor)
	s.Attempt, s.FirstFail, s.LastError, s.NextAt = u.Attempt, u.FirstFail, u.LastError, u.NextAt
	return s
}

func sameSub(a, b hubstore.Subscription) bool {
	return a.Key == b.Key && a.Topic == b.Topic && a.Callback == b.Callback && a.Secret == b.Secret &&
		a.Lease == b.Lease && sameTime(a.Expires, b.Expires) && a.Cursor == b.Cursor && a.Attempt == b.Attempt &&
		sameTime(a.FirstFail, b.FirstFail) && a.LastError == b.LastError && sameTime(a.NextAt, b.NextAt)
}

func sameJob(a, b hubstore.Job) bool {
	return a.ID == b.ID && a.Key == b.Key && a.Host == b.Host && a.Mode == b.Mode && a.Topic == b.Topic &&
		a.Callback == b.Callback && a.Secret == b.Secret && a.Lease == b.Lease && a.VerifyToken == b.VerifyToken &&
		a.HasToken == b.HasToken && a.Attempts == b.Attempts && sameTime(a.NextAt, b.NextAt)
}

func sameEntry(a, b hubstore.Entry) bool {
	return a.Seq == b.Seq && sameTime(a.Published, b.Published) && a.ContentType == b.ContentType &&
		a.HubURL == b.HubURL && slices.Equal(a.Links, b.Links) && string(a.Body) == string(b.Body)
}

func sameDead(a, b hubstore.DeadLetter) bool {
	return a.ID == b.ID && a.Topic == b.Topic && a.Callback == b.Callback && a.Seq == b.Seq &&
		sameTime(a.Published, b.Published) && a.ContentType == b.ContentType && a.HubURL == b.HubURL &&
		slices.Equal(a.Links, b.Links) && string(a.Body) == string(b.Body) && a.Attempts == b.Attempts &&
		sameTime(a.FirstFail, b.FirstFail) && a.LastError == b.LastError && sameTime(a.At, b.At)
}

// compareHub compares the reads of s with the model.
func compareHub(ctx context.Context, rng *rand.Rand, s hubstore.Store, m *hubModel) error {
	heads, err := s.Heads(ctx)
	if err != nil || !maps.Equal(heads, m.heads) {
		return fmt.Errorf("Heads = %v, %v; want %v", heads, err, m.heads)
	}
	for _, topic := range modelTopics {
		if h, err := s.Head(ctx, topic); err != nil || h != m.heads[topic] {
			return fmt.Errorf("Head(%s) = %d, %v; want %d", topic, h, err, m.heads[topic])
		}
		after, max := uint64(rng.IntN(int(m.heads[topic])+2)), 1+rng.IntN(5)
		var want []hubstore.Entry
		for _, e := range m.entries[topic] {
			if e.Seq > after {
				want = append(want, e)
			}
		}
		got, err := s.Entries(ctx, topic, after, max)
		if err != nil || len(got) > max || len(got) > len(want) || len(got) == 0 && len(want) > 0 {
			return fmt.Errorf("Entries(%s, %d, %d) = %d entries, %v; want up to %d", topic, after, max, len(got), err, min(max, len(want)))
		}
		for i := range got {
			if !sameEntry(got[i], want[i]) {
				return fmt.Errorf("Entries(%s, %d, %d)[%d] = %+v;\nwant %+v", topic, after, max, i, got[i], want[i])
			}
		}
		n, err := s.CountSubscriptions(ctx, topic)
		if err != nil || n != m.countSubs(topic) {
			return fmt.Errorf("CountSubscriptions(%s) = %d, %v; want %d", topic, n, err, m.countSubs(topic))
		}
	}
	for _, topic := range append([]string{""}, modelTopics...) {
		var got []hubstore.Subscription
		for sb, err := range s.Subscriptions(ctx, topic) {
			if err != nil {
				return fmt.Errorf("Subscriptions(%q): %w", topic, err)
			}
			got = append(got, sb)
		}
		var want []hubstore.Subscription
		for _, k := range slices.Sorted(maps.Keys(m.subs)) {
			if topic == "" || m.subs[k].Topic == topic {
				want = append(want, m.subs[k])
			}
		}
		if !slices.EqualFunc(got, want, sameSub) {
			return fmt.Errorf("Subscriptions(%q) = %+v;\nwant %+v", topic, got, want)
		}
	}
	for _, k := range modelKeys {
		got, err := s.GetSubscription(ctx, k)
		want, ok := m.subs[k]
		if !ok && !errors.Is(err, hubstore.ErrNotFound) || ok && (err != nil || !sameSub(got, want)) {
			return fmt.Errorf("GetSubscription(%s) = %+v, %v; want %+v (present %v)", k, got, err, want, ok)
		}
	}
	var jobs []hubstore.Job
	for j, err := range s.Jobs(ctx) {
		if err != nil {
			return fmt.Errorf("Jobs: %w", err)
		}
		jobs = append(jobs, j)
	}
	wantJobs := make([]hubstore.Job, 0, len(m.jobs))
	for _, id := range slices.Sorted(maps.Keys(m.jobs)) {
		wantJobs = append(wantJobs, m.jobs[id])
	}
	if !slices.EqualFunc(jobs, wantJobs, sameJob) {
		return fmt.Errorf("Jobs = %+v;\nwant %+v", jobs, wantJobs)
	}
	var dead []hubstore.DeadLetter
	for d, err := range s.DeadLetters(ctx) {
		if err != nil {
			return fmt.Errorf("DeadLetters: %w", err)
		}
		dead = append(dead, d)
	}
	wantDead := make([]hubstore.DeadLetter, 0, len(m.dead))
	for _, id := range slices.Sorted(maps.Keys(m.dead)) {
		wantDead = append(wantDead, m.dead[id])
	}
	if !slices.EqualFunc(dead, wantDead, sameDead) {
		return fmt.Errorf("DeadLetters = %+v;\nwant %+v", dead, wantDead)
	}
	if len(wantDead) > 0 {
		d := wantDead[rng.IntN(len(wantDead))]
		if got, err := s.GetDeadLetter(ctx, d.ID); err != nil || !sameDead(got, d) {
			return fmt.Errorf("GetDeadLetter(%d) = %+v, %v;\nwant %+v", d.ID, got, err, d)
		}
	}
	if _, err := s.GetDeadLetter(ctx, m.lastDL+1); !errors.Is(err, hubstore.ErrNotFound) {
		return fmt.Errorf("GetDeadLetter(%d) past the last: %v, want ErrNotFound", m.lastDL+1, err)
	}
	c, err := s.Counts(ctx)
	if err != nil || c != (hubstore.Counts{Subscriptions: len(m.subs), Jobs: len(m.jobs), DeadLetters: len(m.dead)}) {
		return fmt.Errorf("Counts = %+v, %v; want %d, %d, %d", c, err, len(m.subs), len(m.jobs), len(m.dead))
	}
	return nil
}
