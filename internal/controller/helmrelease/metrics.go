package helmrelease

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kraan-io/kraan-operator/internal/controller/kit"
	"github.com/kraan-io/kraan-operator/internal/pace"
)

// Metrics are the operator's own series, on controller-runtime's registry so
// they are served with the controller metrics on the same endpoint.
type Metrics struct {
	actionDuration *prometheus.HistogramVec
	releaseReady   *prometheus.GaugeVec
	// rollouts are the rollout pacing's releases by state (rolling,
	// queued) and its limit (internal/pace).
	rollouts *prometheus.GaugeVec
	// statusWrites are the status writes sent, by cause.
	statusWrites *prometheus.CounterVec
}

// Causes of a status write (kraan_helmrelease_status_writes_total).
const (
	// writeQueued: the release joined the rollout queue.
	writeQueued = "queued"
	// writeProgress: a Helm action ran longer than a rollout is expected to.
	writeProgress = "progress"
	// writeReconcile: the end of a reconcile, a run's outcome among them.
	writeReconcile = "reconcile"
)

// NewMetrics creates the series and registers them with registerer (the
// controller-runtime registry when nil), or returns those it already holds.
func NewMetrics(registerer prometheus.Registerer) (*Metrics, error) {
	if registerer == nil {
		registerer = metrics.Registry
	}
	actionDuration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kraan_helm_action_duration_seconds",
		Help:    "Duration of Helm actions by action (install, upgrade, test, rollback, uninstall, unlock) and outcome.",
		Buckets: []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
	}, []string{"action", "outcome"})
	releaseReady := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kraan_helmrelease_ready",
		Help: "1 when the HelmRelease is Ready, 0 otherwise; the series goes away with the HelmRelease.",
	}, []string{"namespace", "name"})
	rollouts := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kraan_helmrelease_rollouts",
		Help: "HelmReleases rolling out (state=rolling) and waiting in the rollout queue (state=queued), and how many may roll out at once (state=limit), adapted to what the cluster rolls out.",
	}, []string{"state"})
	statusWrites := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kraan_helmrelease_status_writes_total",
		Help: "HelmRelease status writes sent to the API server, by cause: queued (joining the rollout queue), progress (a Helm action running longer than a rollout is expected to), reconcile (the end of a reconcile).",
	}, []string{"cause"})
	// A second manager in one process (tests, benchmarks) shares the series
	// already registered, as the AddonsLayer metrics do.
	m := &Metrics{}
	var err error
	if m.actionDuration, err = kit.Register(registerer, actionDuration); err != nil {
		return nil, err
	}
	if m.releaseReady, err = kit.Register(registerer, releaseReady); err != nil {
		return nil, err
	}
	if m.rollouts, err = kit.Register(registerer, rollouts); err != nil {
		return nil, err
	}
	if m.statusWrites, err = kit.Register(registerer, statusWrites); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) observeAction(action, outcome string, d time.Duration) {
	if m != nil {
		m.actionDuration.WithLabelValues(action, outcome).Observe(d.Seconds())
	}
}

func (m *Metrics) wroteStatus(cause string) {
	if m != nil {
		m.statusWrites.WithLabelValues(cause).Inc()
	}
}

func (m *Metrics) setReady(namespace, name string, ready bool) {
	if m == nil {
		return
	}
	v := 0.0
	if ready {
		v = 1
	}
	m.releaseReady.WithLabelValues(namespace, name).Set(v)
}

// forgetRelease deletes a release's series, so dashboards do not show
// releases that no longer exist (Kraan reported metrics for deleted layers).
func (m *Metrics) forgetRelease(namespace, name string) {
	if m != nil {
		m.releaseReady.DeleteLabelValues(namespace, name)
	}
}

// setRollouts shows the rollout pacing's state.
func (m *Metrics) setRollouts(s pace.Stats) {
	if m == nil {
		return
	}
	m.rollouts.WithLabelValues("rolling").Set(float64(s.Rolling))
	m.rollouts.WithLabelValues("queued").Set(float64(s.Queued))
	m.rollouts.WithLabelValues("limit").Set(float64(s.Limit))
}
