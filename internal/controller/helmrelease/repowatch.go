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
	"github.com/kraan-io/kraan-operator/internal/releasespec"
)

// repoWatchTick is how often due repositories are looked for; each
// repository is asked at most once per its spec.interval.
const repoWatchTick = time.Second

// minIndexInterval bounds how often one repository is asked, whatever its
// spec.interval says; defaultIndexInterval is used when it says nothing.
const (
	minIndexInterval     = time.Second
	defaultIndexInterval = chart.DefaultIndexTTL
)

// repositoryWatch watches the HelmRepositories that releases get their charts
// from, once per repository and spec.interval however many releases use it
// (an unchanged index costs a conditional request). When an index changes it
// re-queues exactly the releases it concerns: those whose version range now
// resolves to another version, and those stalled on the repository (a chart
// or version it did not list, credentials it refused). Releases whose range
// resolves as before are not touched.
type repositoryWatch struct {
	charts *releasespec.SourceCharts
	// minInterval raises a repository's spec.interval, as every period an
	// object asks for (--min-reconcile-interval).
	minInterval time.Duration
	// events re-queue releases through the controller's channel source.
	events chan event.GenericEvent

	mu    sync.Mutex
	repos map[types.NamespacedName]*watchedRepository
	// repoOf is the repository each tracked release uses.
	repoOf map[types.NamespacedName]types.NamespacedName
}

// watchedRepository is one watched repository and the releases that use it.
type watchedRepository struct {
	releases map[types.NamespacedName]chartUse
	// revision is the index revision the releases last resolved from; ""
	// when the repository has no index (OCI): its tags are listed per chart
	// at every interval instead.
	revision string
	next     time.Time
}

// chartUse is what a release asks of a repository, and what it got.
type chartUse struct {
	chart, constraint string
	// version is the version the release resolved; "" while it is stalled.
	version string
}

func newRepositoryWatch(charts *releasespec.SourceCharts) *repositoryWatch {
	return &repositoryWatch{
		charts: charts,
		events: make(chan event.GenericEvent, 64),
		repos:  map[types.NamespacedName]*watchedRepository{},
		repoOf: map[types.NamespacedName]types.NamespacedName{},
	}
}

// Track records that release uses repo as described, against the index as
// the release just saw it.
func (s *repositoryWatch) Track(ctx context.Context, release, repo types.NamespacedName, use chartUse) {
	if s == nil {
		return
	}
	revision, interval, _, _ := s.revision(ctx, repo, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.repoOf[release]; ok && old != repo {
		s.forgetLocked(release)
	}
	r, ok := s.repos[repo]
	if !ok {
		r = &watchedRepository{releases: map[types.NamespacedName]chartUse{}, next: time.Now().Add(interval)}
		s.repos[repo] = r
	}
	r.revision = revision
	r.releases[release] = use
	s.repoOf[release] = repo
}

// Forget stops watching for release.
func (s *repositoryWatch) Forget(release types.NamespacedName) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(release)
}

func (s *repositoryWatch) forgetLocked(release types.NamespacedName) {
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

// Due checks repo now rather than at its interval: its spec changed, or
// source-controller published a new artifact of it. The check runs apart from
// the caller, an event handler that must not block on the repository.
func (s *repositoryWatch) Due(ctx context.Context, repo types.NamespacedName) {
	if s == nil {
		return
	}
	s.mu.Lock()
	_, tracked := s.repos[repo]
	s.mu.Unlock()
	if !tracked {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dueCheckTimeout)
		defer cancel()
		s.check(ctx, repo)
	}()
}

// dueCheckTimeout bounds a check Due starts; the repository's own timeout
// bounds each request within it.
const dueCheckTimeout = 5 * time.Minute

// checkDue checks each due repository.
func (s *repositoryWatch) checkDue(ctx context.Context) {
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
		s.check(ctx, repo)
	}
}

// check asks repo for its index and re-queues the releases a change concerns.
func (s *repositoryWatch) check(ctx context.Context, key types.NamespacedName) {
	revision, interval, repo, repoErr := s.revision(ctx, key, true)
	s.mu.Lock()
	r := s.repos[key]
	if r == nil {
		s.mu.Unlock()
		return
	}
	r.next = time.Now().Add(interval)
	if revision != "" && revision == r.revision {
		s.mu.Unlock()
		return
	}
	r.revision = revision
	uses := make(map[types.NamespacedName]chartUse, len(r.releases))
	for rel, use := range r.releases {
		uses[rel] = use
	}
	s.mu.Unlock()

	revalidated := map[string]bool{}
	for rel, use := range uses {
		if !s.concerns(ctx, repo, repoErr, use, revalidated) {
			continue
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Chart source changed, reconciling a release", "helmrepository", key.String(), "helmrelease", rel.String())
		s.enqueue(ctx, rel)
	}
}

// concerns reports whether a changed repository concerns a release: it is
// stalled, or its range resolves to another version now. An OCI chart's tag
// list is asked for once per check.
func (s *repositoryWatch) concerns(ctx context.Context, repo *chart.Repository, repoErr error,
	use chartUse, revalidated map[string]bool) bool {
	if use.version == "" || repoErr != nil {
		return true
	}
	revalidate := repo.Type == chart.RepositoryTypeOCI && !revalidated[use.chart]
	revalidated[use.chart] = true
	version, err := s.charts.Fetcher.ResolveVersion(ctx, repo, use.chart, use.constraint, revalidate)
	return err != nil || version != use.version
}

// revision is the repository's index revision and its interval, with the
// repository as read (or why it could not be). A repository that cannot be
// read or reached has revision "unreadable" or "unreachable": its releases
// are looked at when it answers again. A suspended repository keeps the
// revision it had.
func (s *repositoryWatch) revision(ctx context.Context, key types.NamespacedName, revalidate bool) (
	string, time.Duration, *chart.Repository, error) {
	repo, interval, err := s.charts.Repository(ctx, key)
	if interval == 0 {
		interval = defaultIndexInterval
	}
	interval = max(interval, minIndexInterval, s.minInterval)
	if err != nil {
		return "unreadable", interval, nil, err
	}
	return s.indexRevision(ctx, repo, revalidate && !repo.Suspended), interval, repo, nil
}

// indexRevision is the revision of repo's index: "" for a repository
// without one (OCI), "unreachable" when it cannot be fetched.
func (s *repositoryWatch) indexRevision(ctx context.Context, repo *chart.Repository, revalidate bool) string {
	revision, err := s.charts.Fetcher.IndexRevision(ctx, repo, revalidate)
	switch {
	case errors.Is(err, chart.ErrNoIndex):
		return ""
	case err != nil:
		return "unreachable"
	}
	return revision
}

func (s *repositoryWatch) enqueue(ctx context.Context, release types.NamespacedName) {
	obj := &kraanv1.HelmRelease{}
	obj.Namespace, obj.Name = release.Namespace, release.Name
	select {
	case s.events <- event.GenericEvent{Object: obj}:
	case <-ctx.Done():
	}
}

// channel is the source of the re-queues, for the controller's watches.
func (s *repositoryWatch) channel() <-chan event.GenericEvent { return s.events }
