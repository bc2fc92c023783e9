package aggstatus

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/resourcesync-go/resourcesync/aggregate"
)

// The metrics are made with client_golang, as the hub's are
// (websub/hub/metrics.go), in a registry of their own, never the global
// one: a custom Collector reads one Snapshot per scrape, so the figures
// of one scrape are consistent with each other and nothing is kept
// between scrapes (a removed Source's series end with it). Hand-written
// text would be a second implementation of the exposition format and its
// escaping.

const ns = "resourcesync_aggregate"

var (
	srcLabel = []string{"source"}

	descLag = prometheus.NewDesc(ns+"_source_lag_seconds",
		"How far the Source's mirror is behind the Source (only when known).", srcLabel, nil)
	descLastSuccess = prometheus.NewDesc(ns+"_source_last_success_timestamp_seconds",
		"When the Source's last successful run ended (absent before the first).", srcLabel, nil)
	descNext = prometheus.NewDesc(ns+"_source_next_run_timestamp_seconds",
		"When the Source's next run is due (absent when none is planned).", srcLabel, nil)
	descFailures = prometheus.NewDesc(ns+"_source_consecutive_failures",
		"Consecutive failed runs of the Source (0 after a success).", srcLabel, nil)
	descRuns = prometheus.NewDesc(ns+"_source_runs_total",
		"Runs of the Source since the aggregator started.", srcLabel, nil)
	descSucceeded = prometheus.NewDesc(ns+"_source_runs_succeeded_total",
		"Successful runs of the Source since the aggregator started.", srcLabel, nil)
	descFetched = prometheus.NewDesc(ns+"_source_fetched_total",
		"Resources fetched from the Source since the aggregator started.", srcLabel, nil)
	descDeleted = prometheus.NewDesc(ns+"_source_deleted_total",
		"Resources deleted from the Source's mirror since the aggregator started.", srcLabel, nil)
	descFailed = prometheus.NewDesc(ns+"_source_failed_total",
		"Resources of the Source that failed since the aggregator started.", srcLabel, nil)
	descBytes = prometheus.NewDesc(ns+"_source_bytes_total",
		"Bytes fetched from the Source since the aggregator started.", srcLabel, nil)
	descUp = prometheus.NewDesc(ns+"_source_up",
		"1 when the Source's last run succeeded, else 0.", srcLabel, nil)
	descInfo = prometheus.NewDesc(ns+"_source_info",
		"The Source's URL (user information removed), kind, state and last failure's reason; always 1.",
		[]string{"source", "url", "kind", "state", "reason"}, nil)
	descWorkers = prometheus.NewDesc(ns+"_workers", "Run slots.", nil, nil)
	descBusy    = prometheus.NewDesc(ns+"_busy_workers", "Run slots in use.", nil, nil)
	descSources = prometheus.NewDesc(ns+"_sources", "Sources in the sources file.", nil, nil)
	descSrcErr  = prometheus.NewDesc(ns+"_sources_file_error",
		"1 when the last reload of the sources file failed (the previous Sources are kept), else 0.", nil, nil)
)

type collector struct{ snapshot func() aggregate.Snapshot }

// NewCollector returns a prometheus.Collector of the aggregator's metrics
// (resourcesync_aggregate_*), read from snapshot at each scrape. Handler
// serves it at /metrics; register it elsewhere to serve it with other
// metrics.
func NewCollector(snapshot func() aggregate.Snapshot) prometheus.Collector {
	return collector{snapshot}
}

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLag, descLastSuccess, descNext, descFailures, descRuns, descSucceeded,
		descFetched, descDeleted, descFailed, descBytes, descUp, descInfo, descWorkers, descBusy, descSources, descSrcErr} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := Sanitize(c.snapshot())
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(descWorkers, float64(s.Workers))
	gauge(descBusy, float64(s.Busy))
	gauge(descSources, float64(len(s.Sources)))
	gauge(descSrcErr, b2f(s.SourcesError != ""))
	seen := make(map[string]bool, len(s.Sources))
	for _, x := range s.Sources {
		if seen[x.ID] {
			continue // a series twice would fail the whole scrape
		}
		seen[x.ID] = true
		id := x.ID
		if x.LagKnown {
			gauge(descLag, x.Lag.Seconds(), id)
		}
		if !x.LastSuccess.IsZero() {
			gauge(descLastSuccess, float64(x.LastSuccess.UnixMilli())/1e3, id)
		}
		if !x.Next.IsZero() {
			gauge(descNext, float64(x.Next.UnixMilli())/1e3, id)
		}
		gauge(descFailures, float64(x.Failures), id)
		counter(descRuns, float64(x.Runs), id)
		counter(descSucceeded, float64(x.Succeeded), id)
		counter(descFetched, float64(x.Fetched), id)
		counter(descDeleted, float64(x.Deleted), id)
		counter(descFailed, float64(x.Failed), id)
		counter(descBytes, float64(x.Bytes), id)
		gauge(descUp, b2f(up(x)), id)
		gauge(descInfo, 1, id, x.URL, x.Kind, x.State, x.Reason)
	}
}

// up: the last run succeeded (a success is known, no failure since).
func up(x aggregate.SourceStatus) bool { return x.Failures == 0 && !x.LastSuccess.IsZero() }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func metricsHandler(snapshot func() aggregate.Snapshot) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(snapshot),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
