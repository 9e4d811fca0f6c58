package helmrelease

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics_ReadySeriesGoesAwayWithTheRelease(t *testing.T) {
	g := NewWithT(t)
	m, err := NewMetrics(prometheus.NewRegistry())
	g.Expect(err).NotTo(HaveOccurred())

	m.setReady("apps", "podinfo", true)
	m.setReady("apps", "other", false)
	g.Expect(testutil.ToFloat64(m.releaseReady.WithLabelValues("apps", "podinfo"))).To(Equal(1.0))
	g.Expect(testutil.CollectAndCount(m.releaseReady)).To(Equal(2))

	m.forgetRelease("apps", "podinfo")
	g.Expect(testutil.CollectAndCount(m.releaseReady)).To(Equal(1), "a deleted release keeps its series")

	m.observeAction("install", outcomeSuccess, 2*time.Second)
	g.Expect(testutil.CollectAndCount(m.actionDuration)).To(Equal(1))
}

func TestNewMetrics_SecondManagerSharesTheSeries(t *testing.T) {
	g := NewWithT(t)
	registry := prometheus.NewRegistry()
	first, err := NewMetrics(registry)
	g.Expect(err).NotTo(HaveOccurred())
	second, err := NewMetrics(registry)
	g.Expect(err).NotTo(HaveOccurred(), "a second manager in one process could not register its metrics")
	second.setReady("apps", "podinfo", true)
	g.Expect(testutil.ToFloat64(first.releaseReady.WithLabelValues("apps", "podinfo"))).To(Equal(1.0))
}

func TestMetrics_StatusWritesByCause(t *testing.T) {
	g := NewWithT(t)
	m, err := NewMetrics(prometheus.NewRegistry())
	g.Expect(err).NotTo(HaveOccurred())
	m.wroteStatus(writeQueued)
	m.wroteStatus(writeReconcile)
	m.wroteStatus(writeReconcile)
	g.Expect(testutil.ToFloat64(m.statusWrites.WithLabelValues(writeReconcile))).To(Equal(2.0))
	g.Expect(testutil.ToFloat64(m.statusWrites.WithLabelValues(writeQueued))).To(Equal(1.0))
	var none *Metrics
	none.wroteStatus(writeProgress) // a reconciler without metrics (unit tests) records nothing
}
