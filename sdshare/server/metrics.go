package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics live in the server's own registry, never the global one.
type metrics struct {
	handler http.Handler
}

func newMetrics(s *Server) *metrics {
	const ns = "sdshare_server"
	reg := prometheus.NewRegistry()
	for _, c := range s.cols {
		l := prometheus.Labels{"collection": c.name}
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "resources", ConstLabels: l,
				Help: "Resources (IRI subjects) in the collection's current graph."},
				func() float64 { return float64(c.version().gf.resources) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "triples", ConstLabels: l,
				Help: "Triples in the collection's current graph."},
				func() float64 { return float64(c.version().gf.triples) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "journal_seq", ConstLabels: l,
				Help: "Seq of the newest change journal record the graph includes."},
				func() float64 { return float64(c.version().seq) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "reloads_total", ConstLabels: l,
				Help: "Loads of the collection's files."},
				func() float64 { return float64(c.reloads.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "reload_errors_total", ConstLabels: l,
				Help: "Loads that failed (the last good graph stays served)."},
				func() float64 { return float64(c.reloadErrors.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "canonicalisations_total", ConstLabels: l,
				Help: "Canonical labellings of fragments with blank nodes: at load, once per change of a fragment; per request only for those that take a few milliseconds at most."},
				func() float64 { return float64(c.canonRuns.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "canonicalisations_over_budget_total", ConstLabels: l,
				Help: "Canonical labellings stopped by the budget (the fragment is served with its labels as loaded)."},
				func() float64 { return float64(c.canonOver.Load()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "fragments_over_budget", ConstLabels: l,
				Help: "Fragments of the current graph beyond the canonical labelling budget."},
				func() float64 { return float64(c.version().overBudget) }),
		)
	}
	for _, w := range s.senders {
		l := prometheus.Labels{"collection": w.c.name, "receiver": w.sender.URL}
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "push_cursor", ConstLabels: l,
				Help: "Journal seq the push receiver acknowledged last."},
				func() float64 { return float64(w.sender.Stats().Cursor) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "push_delivered_total", ConstLabels: l,
				Help: "Fragments the push receiver acknowledged (2xx)."},
				func() float64 { return float64(w.sender.Stats().Delivered) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "push_failures_total", ConstLabels: l,
				Help: "Failed push attempts (retried)."},
				func() float64 { return float64(w.sender.Stats().Failures) }),
		)
	}
	return &metrics{handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
}
