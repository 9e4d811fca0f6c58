package helmrelease

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kraan-io/kraan-operator/internal/pace"
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

// A run's progress is written only once it has run longer than a rollout
// is expected to take: at least 30 s, longer when the pacer has learnt that
// rollouts take longer or sees many in flight (a wave of thousands), so that
// a rollout of normal length costs no status write before its outcome; never
// later than half the release's timeout.
func TestProgressDelay_NoShorterThanAnExpectedRollout(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{}
	fiveMinutes := 5 * time.Minute
	g.Expect(r.progressDelay(fiveMinutes)).To(Equal(minProgressDelay), "without a pacer")
	r.pacer = pace.New(pace.Options{})
	g.Expect(r.progressDelay(fiveMinutes)).To(Equal(minProgressDelay), "before any rollout")
	r.pacer.Observe(2*time.Second, 0)
	g.Expect(r.progressDelay(fiveMinutes)).To(Equal(minProgressDelay), "3 × 2 s + 5 s is shorter")
	r.pacer = pace.New(pace.Options{})
	r.pacer.Observe(20*time.Second, 0)
	g.Expect(r.progressDelay(fiveMinutes)).To(Equal(65*time.Second), "3 × 20 s + 5 s")

	// 300 rolling out while one ends every 250 ms (a wave on a cluster that
	// rolls out 4 a second): a run is expected to take 75 s.
	now := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	r.pacer = pace.New(pace.Options{Min: 300, Now: func() time.Time { return now }})
	for i := range 300 {
		r.pacer.Admit(types.NamespacedName{Namespace: "wave", Name: fmt.Sprintf("r%d", i)})
	}
	for range 100 {
		now = now.Add(250 * time.Millisecond)
		r.pacer.Observe(2*time.Second, 0)
	}
	g.Expect(r.progressDelay(fiveMinutes)).To(Equal(150*time.Second), "2 × 75 s + 5 s, but at most half the timeout")
	g.Expect(r.progressDelay(10*time.Minute)).To(Equal(155*time.Second), "2 × 75 s + 5 s")
	g.Expect(r.progressDelay(20*time.Second)).To(Equal(minProgressDelay), "half of a short timeout is less than 30 s")
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
