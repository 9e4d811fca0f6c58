package helmrelease

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/helm/chart"
)

// staleChartsTick is how often due repositories are looked for; each
// repository is asked at most once per its spec.interval.
const staleChartsTick = time.Second

// minIndexInterval bounds how often one repository is asked, whatever its
// spec.interval says.
const minIndexInterval = time.Second

// staleCharts watches the index of each HelmRepository that releases are
// stalled on (a chart or version it does not list, credentials it refused)
// and re-queues exactly those releases when the index changes. One fetch per
// repository and interval serves all of them; an unchanged index costs a
// conditional request. Nothing else re-queues a stalled release, so a release
// waiting for a chart version that is never published costs nothing.
type staleCharts struct {
	charts *SourceCharts
	// events re-queue releases through the controller's channel source.
	events chan event.GenericEvent

	mu    sync.Mutex
	repos map[types.NamespacedName]*staleRepository
	// repoOf is the repository each tracked release waits on.
	repoOf map[types.NamespacedName]types.NamespacedName
}

// staleRepository is one watched repository.
type staleRepository struct {
	releases map[types.NamespacedName]bool
	// revision is the index revision the releases failed on; "" when the
	// repository has no index (OCI), in which case they are re-queued at
	// every interval.
	revision string
	next     time.Time
}

func newStaleCharts(charts *SourceCharts) *staleCharts {
	return &staleCharts{
		charts: charts,
		events: make(chan event.GenericEvent, 64),
		repos:  map[types.NamespacedName]*staleRepository{},
		repoOf: map[types.NamespacedName]types.NamespacedName{},
	}
}

// Track records that release is stalled on repo's index as it is now.
func (s *staleCharts) Track(ctx context.Context, release, repo types.NamespacedName) {
	if s == nil {
		return
	}
	revision, interval := s.revision(ctx, repo, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.repoOf[release]; ok && old != repo {
		s.forgetLocked(release)
	}
	r, ok := s.repos[repo]
	if !ok {
		r = &staleRepository{releases: map[types.NamespacedName]bool{}, next: time.Now().Add(interval)}
		s.repos[repo] = r
	}
	r.revision = revision
	r.releases[release] = true
	s.repoOf[release] = repo
}

// Forget stops watching for release.
func (s *staleCharts) Forget(release types.NamespacedName) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(release)
}

func (s *staleCharts) forgetLocked(release types.NamespacedName) {
	repo, ok := s.repoOf[release]
	if !ok {
		return
	}
	delete(s.repoOf, release)
	if r := s.repos[repo]; r != nil {
		delete(r.releases, release)
		if len(r.releases) == 0 {
			delete(s.repos, repo)
		}
	}
}

// checkDue asks each due repository for its index and re-queues the
// releases of those whose index changed.
func (s *staleCharts) checkDue(ctx context.Context) {
	now := time.Now()
	s.mu.Lock()
	var due []types.NamespacedName
	for key, r := range s.repos {
		if !now.Before(r.next) {
			due = append(due, key)
		}
	}
	s.mu.Unlock()
	for _, repo := range due {
		revision, interval := s.revision(ctx, repo, true)
		s.mu.Lock()
		r := s.repos[repo]
		if r == nil {
			s.mu.Unlock()
			continue
		}
		r.next = time.Now().Add(interval)
		changed := revision == "" || revision != r.revision
		var releases []types.NamespacedName
		if changed {
			for rel := range r.releases {
				releases = append(releases, rel)
			}
		}
		s.mu.Unlock()
		for _, rel := range releases {
			ctrl.LoggerFrom(ctx).V(1).Info("Chart source changed, reconciling a stalled release", "helmrepository", repo.String(), "helmrelease", rel.String())
			s.enqueue(ctx, rel)
		}
	}
}

// revision is the repository's index revision and its interval. A repository
// that cannot be read or reached has revision "unreachable": the releases are
// re-queued when it answers again, with whatever it then says.
func (s *staleCharts) revision(ctx context.Context, key types.NamespacedName, revalidate bool) (string, time.Duration) {
	repo, interval, err := s.charts.repository(ctx, key)
	interval = max(interval, minIndexInterval)
	if err != nil {
		return "unreadable", interval
	}
	revision, err := s.charts.Fetcher.IndexRevision(ctx, repo, revalidate)
	switch {
	case errors.Is(err, chart.ErrNoIndex):
		return "", interval
	case err != nil:
		return "unreachable", interval
	}
	return revision, interval
}

func (s *staleCharts) enqueue(ctx context.Context, release types.NamespacedName) {
	obj := &kraanv1.HelmRelease{}
	obj.Namespace, obj.Name = release.Namespace, release.Name
	select {
	case s.events <- event.GenericEvent{Object: obj}:
	case <-ctx.Done():
	}
}

// channel is the source of the re-queues, for the controller's watches.
func (s *staleCharts) channel() <-chan event.GenericEvent { return s.events }
