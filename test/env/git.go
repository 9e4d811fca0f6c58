package env

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// GitBackend is Debian git's smart-HTTP CGI program, which serves the repository.
const GitBackend = "/usr/lib/git-core/git-http-backend"

// gitServer is a bare repository served over HTTP plus the work tree commits
// are made in.
type gitServer struct {
	url, work, bare string
	srv             *http.Server
}

// startGitServer creates an empty bare repository and work tree under dir and
// serves the bare one on a loopback port.
func startGitServer(ctx context.Context, dir string) (*gitServer, error) {
	if _, err := os.Stat(GitBackend); err != nil {
		return nil, fmt.Errorf("git-http-backend not found at %s: install Debian's git: %w", GitBackend, err)
	}
	s := &gitServer{work: filepath.Join(dir, "work"), bare: filepath.Join(dir, "srv", GitRepositoryName+".git")}
	if err := os.MkdirAll(s.work, 0o755); err != nil {
		return nil, err
	}
	if _, err := runGit(ctx, dir, "init", "-q", "--bare", "--initial-branch=main", s.bare); err != nil {
		return nil, err
	}
	if _, err := runGit(ctx, s.work, "init", "-q", "--initial-branch=main"); err != nil {
		return nil, err
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: &cgi.Handler{
		Path: GitBackend,
		Env:  []string{"GIT_PROJECT_ROOT=" + filepath.Dir(s.bare), "GIT_HTTP_EXPORT_ALL=1"},
	}}
	go func() { _ = s.srv.Serve(l) }()
	s.url = "http://" + l.Addr().String() + "/" + GitRepositoryName + ".git"
	return s, nil
}

func (s *gitServer) stop() error { return s.srv.Close() }

// runGit runs git in dir with a fixed identity and returns its output.
func runGit(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "user.name=kraan demo", "-c", "user.email=demo@kraan.io"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Commit replaces the work tree with trees (path in the repository → local
// directory copied there; "." is the root), commits with message, pushes to the served repository, asks
// source-controller to fetch at once and waits until its artifact has the new
// revision, which it returns (main@sha1:…).
func (s *Sources) Commit(ctx context.Context, message string, trees map[string]string) (string, error) {
	if err := s.git.replaceWorkTree(trees); err != nil {
		return "", err
	}
	w := s.git.work
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "--allow-empty", "-m", message},
		{"push", "-q", "-f", s.git.bare, "HEAD:main"}} {
		if _, err := runGit(ctx, w, args...); err != nil {
			return "", err
		}
	}
	sha, err := runGit(ctx, w, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	rev := "main@sha1:" + strings.TrimSpace(sha)
	if err := s.requestSourceReconcile(ctx); err != nil {
		return "", err
	}
	return rev, s.waitArtifact(ctx, rev)
}

// replaceWorkTree empties the work tree (but .git) and copies trees into it;
// they must not overlap.
func (s *gitServer) replaceWorkTree(trees map[string]string) error {
	entries, err := os.ReadDir(s.work)
	if err != nil {
		return err
	}
	for _, en := range entries {
		if en.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(s.work, en.Name())); err != nil {
				return err
			}
		}
	}
	for dest, src := range trees {
		if err := os.CopyFS(filepath.Join(s.work, dest), os.DirFS(src)); err != nil {
			return fmt.Errorf("copying %s into the Git work tree: %w", src, err)
		}
	}
	return nil
}

// requestSourceReconcile is `flux reconcile source git`: the annotation Flux
// controllers react to, so the demo does not wait for the interval.
func (s *Sources) requestSourceReconcile(ctx context.Context) error {
	key := client.ObjectKey{Namespace: FluxNamespace, Name: GitRepositoryName}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		repo := &sourcev1.GitRepository{}
		if err := s.client.Get(ctx, key, repo); err != nil {
			return false, nil //nolint:nilerr // retried until the deadline: conflicts and start-up races are expected
		}
		if repo.Annotations == nil {
			repo.Annotations = map[string]string{}
		}
		repo.Annotations["reconcile.fluxcd.io/requestedAt"] = strconv.FormatInt(time.Now().UnixNano(), 10)
		return s.client.Update(ctx, repo) == nil, nil
	})
}

// waitArtifact waits until source-controller has an artifact of revision.
func (s *Sources) waitArtifact(ctx context.Context, rev string) error {
	key := client.ObjectKey{Namespace: FluxNamespace, Name: GitRepositoryName}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		repo := &sourcev1.GitRepository{}
		if err := s.client.Get(ctx, key, repo); err != nil {
			return false, nil //nolint:nilerr // retried until the deadline
		}
		return repo.Status.Artifact != nil && repo.Status.Artifact.Revision == rev, nil
	})
	if err != nil {
		return fmt.Errorf("source-controller did not fetch %s (log: %s): %w", rev,
			filepath.Join(s.dir, "source-controller.log"), err)
	}
	return nil
}
