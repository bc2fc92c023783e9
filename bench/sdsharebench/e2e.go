//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/resourcesync-go/resourcesync/sdshare"
	"github.com/resourcesync-go/resourcesync/sdshare/atom"
	"github.com/resourcesync-go/resourcesync/sdshare/client"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/server"
)

// stepE2EServer is the end-to-end step's server, a process of its own so
// that the client's peak RSS is the client's: the end-to-end child starts
// it and talks to it by JSON lines (serverMsg) on its stdout and commands
// on its stdin.
const stepE2EServer = "end-to-end-server"

// serverMsg is what the server process reports: its base URL once open,
// the outcome of each "reload" command, and its peak RSS when its stdin
// closes.
type serverMsg struct {
	Base        string  `json:",omitempty"`
	OpenSec     float64 `json:",omitempty"`
	Updated     int     `json:",omitempty"`
	ReloadSec   float64 `json:",omitempty"`
	ReloadCPU   float64 `json:",omitempty"` // the process's CPU during the reload
	OpenCPU     float64 `json:",omitempty"` // and during Open
	PeakRSSKiB  int64   `json:",omitempty"`
	PeakAnonKiB int64   `json:",omitempty"`
	CPUSec      float64 `json:",omitempty"` // the process's CPU so far, answering "cpu"
	Err         string  `json:",omitempty"`
}

func e2eDir(sp Spec) string { return filepath.Join(sp.Dir, "e2e") }

// serverChild serves the dataset with sdshare/server on 127.0.0.1 until
// in closes; on "reload" it swaps in the changed dataset and loads it.
func serverChild(sp Spec, in io.Reader, out io.Writer) int {
	anon := sampleAnon()
	enc := json.NewEncoder(out)
	fail := func(err error) int {
		enc.Encode(serverMsg{Err: err.Error()})
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := e2eDir(sp)
	coll := filepath.Join(dir, "collection.nt")
	os.Remove(coll)
	if err := os.Link(filepath.Join(sp.Dir, fileNT), coll); err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	defer ln.Close()
	base := "http://" + ln.Addr().String() + "/sdshare/"
	t, openCPU := time.Now(), selfCPU()
	srv, err := server.Open(ctx, server.Config{
		BaseURL:     base,
		StateDir:    filepath.Join(dir, "server"),
		Collections: []server.CollectionConfig{{Name: "bench", Path: coll}},
		// One snapshot document, as the brief measures; chunked snapshots
		// are another path of the client.
		ChunkSize: 1 << 30,
		Rescan:    -1,
		Log:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		NoSync:    sp.NoSync,
	})
	if err != nil {
		return fail(err)
	}
	defer srv.Close()
	opened, openCPU := time.Since(t), selfCPU()-openCPU
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	defer hs.Close()
	runDone := make(chan struct{})
	go func() { srv.Run(ctx); close(runDone) }()
	defer func() { cancel(); <-runDone }()
	enc.Encode(serverMsg{Base: base, OpenSec: opened.Seconds(), OpenCPU: openCPU})

	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if sc.Text() == "cpu" {
			enc.Encode(serverMsg{CPUSec: selfCPU()})
			continue
		}
		if name, ok := strings.CutPrefix(sc.Text(), "profile "); ok {
			// A profile of one phase (the fragments'): the step's
			// profile ends here.
			enc.Encode(serverMsg{Err: errString(startPhaseProfile(name))})
			continue
		}
		if sc.Text() == "profile-stop" {
			pprof.StopCPUProfile()
			enc.Encode(serverMsg{})
			continue
		}
		if sc.Text() != "reload" {
			return fail(fmt.Errorf("unknown command %q", sc.Text()))
		}
		next := filepath.Join(dir, "collection.next")
		os.Remove(next)
		if err := os.Link(filepath.Join(sp.Dir, fileNextNT), next); err != nil {
			return fail(err)
		}
		if err := os.Rename(next, coll); err != nil {
			return fail(err)
		}
		t, cpu := time.Now(), selfCPU()
		rep, err := srv.Collection("bench").Load(ctx, true)
		if err != nil {
			return fail(err)
		}
		enc.Encode(serverMsg{Updated: rep.Updated, ReloadSec: time.Since(t).Seconds(), ReloadCPU: selfCPU() - cpu})
	}
	enc.Encode(serverMsg{PeakRSSKiB: vmHWM(), PeakAnonKiB: anon()})
	return 0
}

// endToEnd starts the server process, and keeps a boltstore in step with
// it with sdshare/client: the snapshot first, then, after the collection
// file changed, the changed fragments through the feeds.
func endToEnd(ctx context.Context, sp Spec) ([]Result, error) {
	if err := os.MkdirAll(e2eDir(sp), 0o755); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ssp := sp
	ssp.Step, ssp.CPUProfile = stepE2EServer, ""
	if sp.CPUProfile != "" {
		// The server's own profile beside the client's: which side an
		// end-to-end rate waits on.
		ssp.CPUProfile = strings.TrimSuffix(sp.CPUProfile, ".pprof") + "-server.pprof"
	}
	js, err := json.Marshal(ssp)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), childEnv+"="+string(js))
	cmd.Stderr = os.Stderr
	cmdIn, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	cmdOut, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer cmd.Wait()
	defer cmdIn.Close()
	dec := json.NewDecoder(cmdOut)
	recv := func() (serverMsg, error) {
		var m serverMsg
		if err := dec.Decode(&m); err != nil {
			return m, fmt.Errorf("server process: %w", err)
		}
		if m.Err != "" {
			return m, fmt.Errorf("server process: %s", m.Err)
		}
		return m, nil
	}
	opened, err := recv()
	if err != nil {
		return nil, err
	}
	base := opened.Base
	n := int64(resources(sp.Triples) * perResource)

	hc := &http.Client{Transport: &http.Transport{DialContext: loopbackDial}}
	// Wait for the background snapshot and read it once over HTTP: the
	// client's load then measures loading, not the server's build, and the
	// transfer alone is a row of its own.
	t := time.Now()
	snapBytes, err := fetchSnapshot(ctx, hc, base+"bench/snapshots")
	if err != nil {
		return nil, err
	}
	built := time.Since(t)
	t = time.Now()
	if _, err := fetchSnapshot(ctx, hc, base+"bench/snapshots"); err != nil {
		return nil, err
	}
	transfer := Result{What: "end to end: snapshot GET over HTTP only", Bytes: snapBytes, Triples: n}
	transfer.finish(time.Since(t))

	// Two clients, each with its store and state: the toolkit's client
	// as it is (bulk fragment requests to our server), and the same
	// client fetching each fragment by its own GET (Config.NoBulk), as
	// against any other SDShare server: the same run's baseline.
	openClient := func(name string, noBulk bool) (client.Config, func(), error) {
		store, err := boltstore.OpenDir(filepath.Join(e2eDir(sp), name+"-store"), &boltstore.Options{NoSync: sp.NoSync})
		if err != nil {
			return client.Config{}, nil, err
		}
		state, err := client.OpenState(filepath.Join(e2eDir(sp), name+"-state"))
		if err != nil {
			store.Close()
			return client.Config{}, nil, err
		}
		cfg := client.Config{Overview: base, Store: store, State: state, HTTPClient: hc, NoBulk: noBulk,
			Graph: func(client.Collection) string { return graphName }}
		return cfg, func() { state.Close(); store.Close() }, nil
	}
	cfg, closeCfg, err := openClient("client", false)
	if err != nil {
		return nil, err
	}
	defer closeCfg()

	t = time.Now()
	rep, err := client.Sync(ctx, cfg)
	if err != nil {
		return nil, err
	}
	snap := Result{What: "end to end: client snapshot load into boltstore", Bytes: snapBytes}
	if !rep.OK() || len(rep.Collections) != 1 || !rep.Collections[0].SnapshotLoaded {
		return nil, fmt.Errorf("first sync: %+v", rep)
	}
	snap.Triples = rep.Collections[0].SnapshotTriples
	snap.finish(time.Since(t))
	var getsCfg client.Config
	if sp.Fragments > 1 {
		var closeGets func()
		if getsCfg, closeGets, err = openClient("client-gets", true); err != nil {
			return nil, err
		}
		defer closeGets()
		if rep, err := client.Sync(ctx, getsCfg); err != nil || !rep.OK() {
			return nil, fmt.Errorf("baseline client's first sync: %+v %v", rep, err)
		}
	}

	// The collection changes: the server journals one update per changed
	// resource, which the client then reads from the fragments feed.
	if sp.CPUProfile != "" {
		// The server's profile of the reload alone.
		if _, err := io.WriteString(cmdIn, "profile "+strings.TrimSuffix(sp.CPUProfile, ".pprof")+"-reload-server.pprof\n"); err != nil {
			return nil, err
		}
		if _, err := recv(); err != nil {
			return nil, err
		}
	}
	if _, err := io.WriteString(cmdIn, "reload\n"); err != nil {
		return nil, err
	}
	reloaded, err := recv()
	if err != nil {
		return nil, err
	}
	if sp.CPUProfile != "" {
		io.WriteString(cmdIn, "profile-stop\n")
		if _, err := recv(); err != nil {
			return nil, err
		}
	}
	want := fragmentCount(sp.Fragments, resources(sp.Triples))
	if reloaded.Updated != want {
		return nil, fmt.Errorf("server journalled %d updates, want %d", reloaded.Updated, want)
	}
	// The CPU both processes spend on the fragments (server: the feed
	// pages and fragment GETs; client: the rest): on a shared machine the
	// wall time waits for a CPU, the CPU per fragment does not.
	serverCPU := func() (float64, error) {
		if _, err := io.WriteString(cmdIn, "cpu\n"); err != nil {
			return 0, err
		}
		m, err := recv()
		return m.CPUSec, err
	}
	// fragments runs one client's fragments phase.
	fragments := func(what string, cfg client.Config, profile string) (Result, error) {
		r := Result{What: what}
		if profile != "" {
			// This phase's profile on both sides (the step's ends).
			if err := startPhaseProfile(profile + ".pprof"); err != nil {
				return r, err
			}
			defer pprof.StopCPUProfile()
			if _, err := io.WriteString(cmdIn, "profile "+profile+"-server.pprof\n"); err != nil {
				return r, err
			}
			if _, err := recv(); err != nil {
				return r, err
			}
			defer func() {
				io.WriteString(cmdIn, "profile-stop\n")
				recv()
			}()
		}
		srvCPU0, err := serverCPU()
		if err != nil {
			return r, err
		}
		cliCPU0 := selfCPU()
		t := time.Now()
		rep, err := client.Sync(ctx, cfg)
		if err != nil {
			return r, err
		}
		fragWall := time.Since(t)
		cliCPU := selfCPU() - cliCPU0
		srvCPU1, err := serverCPU()
		if err != nil {
			return r, err
		}
		if !rep.OK() || len(rep.Collections) != 1 {
			return r, fmt.Errorf("second sync: %+v", rep)
		}
		c := rep.Collections[0]
		r.Fragments = c.Applied
		r.Triples = int64(r.Fragments * perResource)
		r.finish(fragWall)
		nf := float64(max(c.Applied, 1))
		r.Note = fmt.Sprintf("%d feed pages, %d fragments in bulk requests; CPU a fragment: client %.0f µs, server %.0f µs (both processes' CPU in this phase)",
			c.Pages, c.Bulk, cliCPU/nf*1e6, (srvCPU1-srvCPU0)/nf*1e6)
		if r.Fragments != want {
			return r, fmt.Errorf("client applied %d fragments, want %d", r.Fragments, want)
		}
		return r, nil
	}
	var gets Result
	if getsCfg.Store != nil {
		if gets, err = fragments("end to end: baseline, client fragments by one GET each into boltstore", getsCfg, ""); err != nil {
			return nil, err
		}
	}
	profile := ""
	if sp.CPUProfile != "" {
		profile = strings.TrimSuffix(sp.CPUProfile, ".pprof") + "-fragments"
	}
	frag, err := fragments("end to end: client fragments via feeds into boltstore", cfg, profile)
	if err != nil {
		return nil, err
	}
	if gets.Seconds > 0 {
		frag.Note += fmt.Sprintf("; %.2fx the same run's one GET a fragment (%.0f fragments/s; %s)", frag.FragmentsPerSec/gets.FragmentsPerSec, gets.FragmentsPerSec, gets.Note)
	}

	cmdIn.Close()
	last, err := recv()
	if err != nil {
		return nil, err
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("server process: %w", err)
	}
	srvRow := Result{What: "end to end: server process, baseline load (server.Open)", Triples: n,
		PeakRSSKiB: last.PeakRSSKiB, PeakAnonKiB: last.PeakAnonKiB,
		CPUSec:    (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds(),
		ReloadSec: reloaded.ReloadSec, Updated: reloaded.Updated,
		Note: fmt.Sprintf("server: snapshot built %.1fs after Open; re-diff of the changed file (%d updates journalled) %.1fs, CPU %.2fs (Open's CPU %.2fs: %.3fx); RSS and CPU are the server process's, whole run",
			built.Seconds(), reloaded.Updated, reloaded.ReloadSec, reloaded.ReloadCPU, opened.OpenCPU, reloaded.ReloadCPU/max(opened.OpenCPU, 1e-9))}
	srvRow.finish(time.Duration(opened.OpenSec * float64(time.Second)))
	out := []Result{srvRow, transfer, snap, frag}
	if gets.Seconds > 0 {
		out = append(out, gets)
	}
	return out, nil
}

// startPhaseProfile ends the CPU profile running (the step's) and starts
// one of a phase into name.
func startPhaseProfile(name string) error {
	pprof.StopCPUProfile()
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	// The file stays open until the process ends: StopCPUProfile
	// flushes it.
	return pprof.StartCPUProfile(f)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// fetchSnapshot reads the snapshots feed at u, then GETs its snapshot
// (waiting while the server answers 202) and discards it; it returns the
// snapshot's length.
func fetchSnapshot(ctx context.Context, hc *http.Client, u string) (int64, error) {
	body, err := get(ctx, hc, u)
	if err != nil {
		return 0, err
	}
	feed, err := atom.Decode(body, u)
	body.Close()
	if err != nil {
		return 0, err
	}
	if len(feed.Entries) == 0 || len(feed.Entries[0].LinksRel(sdshare.RelSnapshot)) == 0 {
		return 0, fmt.Errorf("%s: no snapshot entry", u)
	}
	href := feed.Entries[0].LinksRel(sdshare.RelSnapshot)[0].Href
	base, _ := url.Parse(u)
	ref, err := url.Parse(href)
	if err != nil {
		return 0, err
	}
	snap := base.ResolveReference(ref).String()
	deadline := time.Now().Add(30 * time.Minute)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, snap, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Accept", "application/n-triples")
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			return 0, err
		case resp.StatusCode == http.StatusOK:
			return n, nil
		case resp.StatusCode != http.StatusAccepted || time.Now().After(deadline):
			return 0, fmt.Errorf("GET %s: %s", snap, resp.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func get(ctx context.Context, hc *http.Client, u string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return resp.Body, nil
}

// selfCPU is this process's user+system CPU time so far, in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
