package addonslayer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/controller/kit"
)

// layerConditionTypes are the conditions the gauge reports.
var layerConditionTypes = []string{
	kraanv1.ReadyCondition, kraanv1.DeployedCondition, kraanv1.StalledCondition, kraanv1.ReconcilingCondition,
}

// abnormal are the negative-polarity conditions among them.
var abnormal = map[string]bool{kraanv1.StalledCondition: true, kraanv1.ReconcilingCondition: true}

// Label names of the layer series.
const (
	layerLabelName   = "name"
	layerLabelType   = "type"
	layerLabelStatus = "status"
)

var conditionStatuses = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}

// layerMetrics are the AddonsLayer series. The layer's name is in label
// `name` (Kraan put it in `namespace`) and its series go with the layer
// (Kraan kept reporting deleted layers).
type layerMetrics struct {
	condition *prometheus.GaugeVec
	duration  *prometheus.HistogramVec
	// awaiting is 1 for each layer whose status is still Kraan's: the
	// operator leaves it alone until `kubectl kraan takeover`.
	awaiting *prometheus.GaugeVec
}

// newLayerMetrics registers the series with registerer (controller-runtime's
// registry when nil), reusing series already registered by an earlier manager
// in the same process.
func newLayerMetrics(registerer prometheus.Registerer) (*layerMetrics, error) {
	if registerer == nil {
		registerer = metrics.Registry
	}
	condition := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kraan_addonslayer_condition",
		Help: "1 for the status (True, False, Unknown) each condition of an AddonsLayer has, 0 for the others.",
	}, []string{layerLabelName, layerLabelType, layerLabelStatus})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kraan_addonslayer_reconcile_duration_seconds",
		Help:    "Duration of AddonsLayer reconciles.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{layerLabelName})
	awaiting := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "kraan_addonslayer_awaiting_takeover",
		Help: "1 for each AddonsLayer whose status Kraan's controller wrote and that awaits `kubectl kraan takeover`; the operator writes nothing for it until then.",
	}, []string{layerLabelName})
	m := &layerMetrics{}
	var err error
	if m.condition, err = kit.Register(registerer, condition); err != nil {
		return nil, err
	}
	if m.duration, err = kit.Register(registerer, duration); err != nil {
		return nil, err
	}
	if m.awaiting, err = kit.Register(registerer, awaiting); err != nil {
		return nil, err
	}
	return m, nil
}

// record sets the condition gauge from the layer's status and observes d.
func (m *layerMetrics) record(obj *kraanv1.AddonsLayer, d time.Duration) {
	if m == nil || !obj.DeletionTimestamp.IsZero() && len(obj.Finalizers) == 0 {
		return
	}
	for _, t := range layerConditionTypes {
		status := metav1.ConditionUnknown
		if abnormal[t] {
			// Present only while true (kstatus): absent is False.
			status = metav1.ConditionFalse
		}
		if c := apimeta.FindStatusCondition(obj.Status.Conditions, t); c != nil {
			status = c.Status
		}
		for _, s := range conditionStatuses {
			v := 0.0
			if s == status {
				v = 1
			}
			m.condition.WithLabelValues(obj.Name, t, string(s)).Set(v)
		}
	}
	m.duration.WithLabelValues(obj.Name).Observe(d.Seconds())
	m.awaiting.DeleteLabelValues(obj.Name)
}

// awaitingTakeOver reports the layer as waiting for its take-over; its
// condition series are left out: the conditions are Kraan's.
func (m *layerMetrics) awaitingTakeOver(name string) {
	if m == nil {
		return
	}
	m.awaiting.WithLabelValues(name).Set(1)
}

// forget deletes every series of the layer.
func (m *layerMetrics) forget(name string) {
	if m == nil {
		return
	}
	m.condition.DeletePartialMatch(prometheus.Labels{layerLabelName: name})
	m.duration.DeletePartialMatch(prometheus.Labels{layerLabelName: name})
	m.awaiting.DeleteLabelValues(name)
}
