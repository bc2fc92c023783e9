package hub

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics live in the hub's own registry, never the global one.
type metrics struct {
	reg           *prometheus.Registry
	subscriptions prometheus.Gauge
	dead          prometheus.Gauge
	requests      *prometheus.CounterVec
	publishes     *prometheus.CounterVec
	deliveries    *prometheus.CounterVec
	verifications *prometheus.CounterVec
	ended         *prometheus.CounterVec
	retries       prometheus.Counter
	failures      prometheus.Counter
	refused       prometheus.Counter
	latency       prometheus.Histogram
	lag           prometheus.Histogram
}

func newMetrics(h *Hub) *metrics {
	const ns = "websub_hub"
	m := &metrics{
		reg: prometheus.NewRegistry(),
		subscriptions: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "subscriptions",
			Help: "Active (verified, unexpired) subscriptions."}),
		dead: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "dead_letters",
			Help: "Notifications in the dead-letter store."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "subscription_requests_total",
			Help: "Accepted (202) subscription requests by mode."}, []string{"mode"}),
		publishes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "publishes_total",
			Help: "Notifications stored, by kind (fat, thin, inproc)."}, []string{"kind"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "deliveries_total",
			Help: "Delivery attempts by outcome (success, failure, gone, dead, replayed)."}, []string{"outcome"}),
		verifications: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "verifications_total",
			Help: "Verifications of intent by outcome."}, []string{"outcome"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "subscriptions_ended_total",
			Help: "Subscriptions ended by the hub, by reason (expired, gone)."}, []string{"reason"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "delivery_retries_total",
			Help: "Failed deliveries scheduled for a retry."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "delivery_failures_total",
			Help: "Failed delivery attempts (transport error or non-2xx other than 410)."}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "refused_addresses_total",
			Help: "Callbacks or dials refused by the request-forgery guard."}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "delivery_duration_seconds",
			Help: "Duration of one delivery request.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "delivery_lag_seconds",
			Help: "Time from publish to successful delivery.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 14)}),
	}
	backlog := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "backlog_notifications",
		Help: "Notifications published but not yet delivered, summed over subscriptions."}, func() float64 {
		h.mu.Lock()
		defer h.mu.Unlock()
		var n uint64
		for _, ts := range h.topics {
			for _, s := range ts.subs {
				s.mu.Lock()
				if head := ts.head.Load(); head > s.rec.Cursor {
					n += head - s.rec.Cursor
				}
				s.mu.Unlock()
			}
		}
		return float64(n)
	})
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "pending_verifications",
		Help: "Verifications of intent waiting or in progress (all nodes)."}, func() float64 {
		c, _ := h.st.Counts(context.Background())
		return float64(c.Jobs)
	})
	m.reg.MustRegister(backlog, pending, m.subscriptions, m.dead, m.requests, m.publishes, m.deliveries, m.verifications,
		m.ended, m.retries, m.failures, m.refused, m.latency, m.lag,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	c, _ := h.st.Counts(context.Background())
	m.dead.Set(float64(c.DeadLetters))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}
