package helm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/kraan-io/kraan-operator/test/testenv"
)

func TestAPIServerUnavailable(t *testing.T) {
	services := schema.GroupResource{Resource: "services"}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"the request outlived the API server's timeout", apierrors.NewTimeoutError("request did not complete within requested timeout", 0), true},
		{"the API server is throttling", apierrors.NewTooManyRequests("slow down", 1), true},
		{"the API server is not ready", apierrors.NewServiceUnavailable("starting"), true},
		{"the API server's own storage timed out", apierrors.NewServerTimeout(services, "create", 1), true},
		{"the connection was refused", refused, true},
		{"as Helm wraps and joins apply errors", fmt.Errorf("install of release a/b failed: %w",
			errors.Join(errors.New("failed to create resource"), fmt.Errorf("server-side apply failed: %w",
				apierrors.NewTimeoutError("request did not complete within requested timeout", 0)))), true},
		{"Helm's wait ran out of spec.timeout", fmt.Errorf("resource not ready: %w", context.DeadlineExceeded), false},
		{"the operator is stopping", context.Canceled, false},
		{"the object is invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "s", nil), false},
		{"an admission webhook refused it", apierrors.NewInternalError(errors.New("failed calling webhook")), false},
		{"the service account may not", apierrors.NewForbidden(services, "s", errors.New("no")), false},
		{"nothing failed", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(apiServerUnavailable(tt.err)).To(Equal(tt.want))
		})
	}
}

// TestEngine_Run_anActionTheAPIServerCutIsCompletedNotCounted: an install or
// upgrade that the API server fails to serve part-way (what 10,000 releases
// applied at once made an overloaded API server answer: "Timeout: request
// did not complete within requested timeout") leaves a failed revision.
// Nothing about the release failed: with Flux's default of no retries,
// counting it stalled the release for good. The engine marks the revision
// interrupted, does not count it, and the next attempt completes it in place
// with no remediation: no uninstall, the objects keep their identity.
func TestEngine_Run_anActionTheAPIServerCutIsCompletedNotCounted(t *testing.T) {
	env, fault, engine := engineWithWriteFaults(t)
	for _, tt := range []struct {
		name      string
		namespace string
		upgrade   bool
		// cut is the resource whose write the API server fails: one the
		// action writes (an upgrade of the values only rewrites the
		// ConfigMap).
		cut  string
		want map[int]string
	}{
		{name: "first install", namespace: "cut-install", cut: "services",
			want: map[int]string{1: "superseded", 2: "deployed"}},
		{name: "upgrade", namespace: "cut-upgrade", upgrade: true, cut: "configmaps",
			want: map[int]string{1: "superseded", 2: "failed", 3: "deployed"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			g.Expect(env.Client.Create(ctx, namespaceObject(tt.namespace))).To(Succeed())
			req := interruptibleRequest(g, tt.namespace)
			req.Actions.Policy = Policy{} // Flux's default: no retries
			if tt.upgrade {
				_, err := engine.Run(ctx, req)
				g.Expect(err).NotTo(HaveOccurred())
				req.Desired.Values = map[string]any{"message": "two"}
				req.Desired.ChartDigest = "sha256:two"
			}

			fault.arm(tt.cut)
			res, err := engine.Run(ctx, req)
			g.Expect(fault.served.Load()).To(Equal(int32(1)), "the fault was not injected")
			var cut *APIServerInterruptedError
			g.Expect(errors.As(err, &cut)).To(BeTrue(), "run error: %v", err)
			g.Expect(err).To(MatchError(ContainSubstring("request did not complete within requested timeout")))
			g.Expect(res.Failures).To(Equal(Failures{}), "a failure the API server caused counted against the retries")
			g.Expect(res.Latest.Info.Status.String()).To(Equal("failed"))
			g.Expect(Interrupted(res.Latest)).To(BeTrue(), "the revision is not marked interrupted")
			configMap := &corev1.ConfigMap{}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: tt.namespace, Name: "app"}, configMap)).To(Succeed())

			res, err = engine.Run(ctx, req)
			g.Expect(err).NotTo(HaveOccurred())
			actions := make([]Action, 0, len(res.Taken))
			for _, taken := range res.Taken {
				actions = append(actions, taken.Action)
			}
			g.Expect(actions).To(Equal([]Action{ActionUpgrade}), "completed in place, with no remediation")
			g.Expect(res.Next).To(Equal(ActionNone))
			g.Expect(req.Desired.Matches(res.Latest)).To(BeTrue())
			statuses := map[int]string{}
			for version, rel := range recordsOf(g, engine, req) {
				statuses[version] = rel.Info.Status.String()
			}
			g.Expect(statuses).To(Equal(tt.want))
			after := &corev1.ConfigMap{}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: tt.namespace, Name: "app"}, after)).To(Succeed())
			g.Expect(after.UID).To(Equal(configMap.UID), "the release's objects were deleted and created again")
		})
	}
}

// TestEngine_Run_anActionTheStopCutIsLeftPending: the operator stopped and
// the Helm runs' grace period ended (internal/helmrun cancels the runs'
// context) while an install was applying its objects. Helm marks the revision
// failed; nothing about the release failed, so the engine leaves it pending,
// as a crash would, says the operator stopped, and counts no failure: the
// next leader unlocks it (not all its objects were applied) and installs.
func TestEngine_Run_anActionTheStopCutIsLeftPending(t *testing.T) {
	env, fault, engine := engineWithWriteFaults(t)
	g := NewWithT(t)
	g.Expect(env.Client.Create(context.Background(), namespaceObject("cut-by-stop"))).To(Succeed())
	req := interruptibleRequest(g, "cut-by-stop")
	req.Actions.Policy = Policy{} // Flux's default: no retries

	ctx, stop := context.WithCancel(context.Background())
	fault.cutWith(func() error { stop(); return context.Canceled })
	fault.arm("services")
	res, err := engine.Run(ctx, req)
	g.Expect(fault.served.Load()).To(Equal(int32(1)), "the fault was not injected")
	var cut *APIServerInterruptedError
	g.Expect(errors.As(err, &cut)).To(BeTrue(), "run error: %v", err)
	g.Expect(cut.Stopped).To(BeTrue())
	g.Expect(err).To(MatchError(ContainSubstring("the operator stopped part-way through revision 1's install, after the Helm runs' grace period: the revision is left pending")))
	g.Expect(res.Failures).To(Equal(Failures{}), "a stop counted against the retries")
	g.Expect(res.Latest.Info.Status.String()).To(Equal("pending-install"), "the revision is not left as a crash leaves it")
	g.Expect(Interrupted(res.Latest)).To(BeFalse())

	res, err = engine.Run(context.Background(), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Next).To(Equal(ActionNone))
	g.Expect(req.Desired.Matches(res.Latest)).To(BeTrue())
}

// engineWithWriteFaults is an engine on a fresh envtest whose writes go
// through a writeTimeout, closed before the API server stops.
func engineWithWriteFaults(t *testing.T) (*testenv.Env, *writeTimeout, *Engine) {
	t.Helper()
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	fault := &writeTimeout{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = fault.wrap
	engine, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(engine.Close)
	return env, fault, engine
}

// writeTimeout answers the next write of a resource, once armed, as
// an overloaded kube-apiserver answers a request that outlived its timeout:
// 504, reason Timeout, no Retry-After (so client-go does not retry it). Every
// other request goes to the real API server.
type writeTimeout struct {
	resource atomic.Value // string
	armed    atomic.Bool
	served   atomic.Int32
	// cut, when set, is what the cut write fails with instead of the 504.
	cut atomic.Value // func() error
}

// cutWith has the cut write fail with what cut returns.
func (f *writeTimeout) cutWith(cut func() error) { f.cut.Store(cut) }

func (f *writeTimeout) arm(resource string) {
	f.resource.Store("/" + resource)
	f.served.Store(0)
	f.armed.Store(true)
}

func (f *writeTimeout) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resource, _ := f.resource.Load().(string)
		if req.Method == http.MethodGet || resource == "" || !strings.Contains(req.URL.Path, resource) || !f.armed.CompareAndSwap(true, false) {
			return next.RoundTrip(req)
		}
		f.served.Add(1)
		if cut, _ := f.cut.Load().(func() error); cut != nil {
			return nil, cut()
		}
		status := apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0).ErrStatus
		status.APIVersion, status.Kind = "v1", "Status"
		body, err := json.Marshal(status)
		if err != nil {
			return nil, err
		}
		return &http.Response{
			StatusCode: http.StatusGatewayTimeout, Status: "504 Gateway Timeout", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:  http.Header{"Content-Type": {"application/json"}},
			Body:    io.NopCloser(bytes.NewReader(body)),
			Request: req,
		}, nil
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
