package source

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// usedSet is the inUse callback a controller would build from the digests
// its objects still reference.
func usedSet(digests ...string) func(string) bool {
	set := map[string]bool{}
	for _, d := range digests {
		set[d] = true
	}
	return func(d string) bool { return set[d] }
}

func TestStore_GC_removesUnusedKeepsUsed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := newArtifactServer(t)
	s, clock := newTestStore(t, Options{})
	oldRev := srv.add("old", tarball(t, file("a.yaml", "old")))
	newRev := srv.add("new", tarball(t, file("a.yaml", "new")))
	oldDir, err := s.Fetch(ctx, oldRev)
	g.Expect(err).NotTo(HaveOccurred())
	newDir, err := s.Fetch(ctx, newRev)
	g.Expect(err).NotTo(HaveOccurred())
	writeFile(t, filepath.Join(s.Root(), "not-ours"), "left alone")
	clock.advance(DefaultGCMinAge)

	removed, err := s.GC(ctx, usedSet(newRev.Digest))

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed).To(ConsistOf(oldRev.Digest))
	g.Expect(oldDir).NotTo(BeAnExistingFile())
	g.Expect(filepath.Join(newDir, "a.yaml")).To(BeARegularFile())
	g.Expect(entries(t, s.Root())).To(ConsistOf(keyOf(newRev.Digest), keyOf(newRev.Digest)+markerSuffix, "not-ours"))

	// A removed digest is fetched again when it is referenced again.
	again, err := s.Fetch(ctx, oldRev)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(oldDir))
	g.Expect(srv.requests.Load()).To(BeEquivalentTo(3))
}

func TestStore_GC_keepsRecentlyFetched(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := newArtifactServer(t)
	s, clock := newTestStore(t, Options{GCMinAge: 5 * time.Minute})
	a := srv.add("rev1", tarball(t, file("a.yaml", "a")))
	dir, err := s.Fetch(ctx, a)
	g.Expect(err).NotTo(HaveOccurred())

	clock.advance(5*time.Minute - 1)
	g.Expect(s.GC(ctx, usedSet())).To(BeEmpty(), "still inside GCMinAge")
	g.Expect(dir).To(BeADirectory())

	clock.advance(1)
	g.Expect(s.GC(ctx, usedSet())).To(ConsistOf(a.Digest))
	g.Expect(dir).NotTo(BeAnExistingFile())
}

func TestStore_GC_afterRestartRemovesUnreferenced(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := newArtifactServer(t)
	s, _ := newTestStore(t, Options{})
	a := srv.add("rev1", tarball(t, file("a.yaml", "a")))
	_, err := s.Fetch(ctx, a)
	g.Expect(err).NotTo(HaveOccurred())

	restarted, err := New(s.Root(), Options{})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(restarted.GC(ctx, usedSet())).To(ConsistOf(a.Digest))
	g.Expect(entries(t, s.Root())).To(BeEmpty())
}

// TestStore_GC_keepsWhatAFetchHolds covers the window between a Fetch
// finding its directory and returning it: the digest is held, so GC leaves
// it even when nothing references it and its age has run out.
func TestStore_GC_keepsWhatAFetchHolds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := newArtifactServer(t)
	s, clock := newTestStore(t, Options{})
	a := srv.add("rev1", tarball(t, file("a.yaml", "a")))
	dir, err := s.Fetch(ctx, a)
	g.Expect(err).NotTo(HaveOccurred())
	clock.advance(DefaultGCMinAge)
	d, err := parseDigest(a.Digest)
	g.Expect(err).NotTo(HaveOccurred())

	s.acquire(d) // what Fetch does before looking at the disk
	g.Expect(s.GC(ctx, usedSet())).To(BeEmpty())
	g.Expect(dir).To(BeADirectory())
	s.release(d) // returning restarts the grace period
	g.Expect(s.GC(ctx, usedSet())).To(BeEmpty())

	clock.advance(DefaultGCMinAge)
	g.Expect(s.GC(ctx, usedSet())).To(ConsistOf(a.Digest))
}

// TestStore_GC_duringDownload runs GC while a download is on the wire: the
// download's temporary files must survive and the Fetch must succeed.
func TestStore_GC_duringDownload(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := newArtifactServer(t)
	s, clock := newTestStore(t, Options{})
	a := srv.add("rev1", tarball(t, file("a.yaml", "a")))
	release := srv.hold()
	defer release()

	var wg sync.WaitGroup
	var dir string
	var fetchErr error
	wg.Go(func() { dir, fetchErr = s.Fetch(ctx, a) })
	<-srv.started
	g.Eventually(func() []string { return entries(t, s.Root()) }).Should(ContainElement(HavePrefix(tmpPrefix)))
	clock.advance(DefaultGCMinAge)

	g.Expect(s.GC(ctx, usedSet())).To(BeEmpty())
	release()
	wg.Wait()

	g.Expect(fetchErr).NotTo(HaveOccurred())
	g.Expect(filepath.Join(dir, "a.yaml")).To(BeARegularFile())
}

func TestStore_GC_removesOrphanedMarker(t *testing.T) {
	g := NewWithT(t)
	s, _ := newTestStore(t, Options{})
	digest := sha256Of([]byte("x"))
	writeFile(t, filepath.Join(s.Root(), keyOf(digest)+markerSuffix), digest)

	g.Expect(s.GC(context.Background(), usedSet())).To(ConsistOf(digest))
	g.Expect(entries(t, s.Root())).To(BeEmpty())
}
