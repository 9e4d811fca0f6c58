package migration_test

import (
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kraan-io/kraan-operator/test/env"
)

// gitRepository serves one commit of files over Git's smart HTTP (Debian
// git's git-http-backend, as test/env and the layers e2e do) and creates the
// GitRepository name in namespace following it. It returns once
// source-controller has an artifact of that commit, whose revision it
// returns; the server stops when the test ends.
func gitRepository(t *testing.T, namespace, name string, files map[string]string) string {
	t.Helper()
	g := NewWithT(t)
	if _, err := os.Stat(env.GitBackend); err != nil {
		t.Fatalf("git-http-backend not found at %s: install Debian's git: %v", env.GitBackend, err)
	}
	dir := t.TempDir()
	work, bare := filepath.Join(dir, "work"), filepath.Join(dir, "srv", "repo.git")
	for p, body := range files {
		g.Expect(os.MkdirAll(filepath.Dir(filepath.Join(work, p)), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(work, p), []byte(body), 0o644)).To(Succeed())
	}
	git(t, dir, "init", "-q", "--bare", "--initial-branch=main", bare)
	git(t, work, "init", "-q", "--initial-branch=main")
	git(t, work, "add", "-A")
	git(t, work, "commit", "-q", "-m", "Flux HelmReleases")
	git(t, work, "push", "-q", bare, "HEAD:main")
	sha := git(t, work, "rev-parse", "HEAD")[:40]

	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: &cgi.Handler{
		Path: env.GitBackend,
		Env:  []string{"GIT_PROJECT_ROOT=" + filepath.Dir(bare), "GIT_HTTP_EXPORT_ALL=1"},
	}}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	repo := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: sourcev1.GitRepositorySpec{URL: "http://" + l.Addr().String() + "/repo.git",
			Interval: metav1.Duration{Duration: time.Hour}, Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
	}
	g.Expect(k8s.Create(t.Context(), repo)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(t.Context(), client.ObjectKeyFromObject(repo), repo)).To(Succeed())
		g.Expect(repo.Status.Artifact).NotTo(BeNil())
		g.Expect(repo.Status.Artifact.Revision).To(Equal("main@sha1:" + sha))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	return repo.Status.Artifact.Revision
}

// git runs git in dir with a fixed identity and fails the test on error.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", append([]string{"-c", "user.name=e2e", "-c", "user.email=e2e@kraan.io"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}
