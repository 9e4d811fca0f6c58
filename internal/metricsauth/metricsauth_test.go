package metricsauth_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kraan-io/kraan-operator/internal/metricsauth"
	"github.com/kraan-io/kraan-operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		panic(err)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// countingTransport counts the requests the filter sends to the API server.
type countingTransport struct {
	next  http.RoundTripper
	count atomic.Int64
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.count.Add(1)
	return t.next.RoundTrip(req)
}

// TestFilter: only a token the API server authenticates, of a user it
// authorizes for `get /metrics`, reads the metrics; answers are cached, so a
// scraper costs the API server nothing between reviews.
func TestFilter(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	clientset := kubernetes.NewForConfigOrDie(env.Config)
	const ns = "default"
	scraper, stranger := serviceAccountToken(t, clientset, ns, "scraper"), serviceAccountToken(t, clientset, ns, "stranger")
	g.Expect(env.Client.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scraper-reads-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "scraper"}},
	})).To(Succeed())

	transport, err := rest.TransportFor(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	counting := &countingTransport{next: transport}
	filter, err := metricsauth.Filter(env.Config, &http.Client{Transport: counting})
	g.Expect(err).NotTo(HaveOccurred())
	handler, err := filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "kraan_metrics 1\n")
	}))
	g.Expect(err).NotTo(HaveOccurred())
	server := httptest.NewServer(handler)
	defer server.Close()

	cases := []struct {
		name, method, path, authorization string
		status                            int
	}{
		{"no token", http.MethodGet, "/metrics", "", http.StatusUnauthorized},
		{"not a bearer token", http.MethodGet, "/metrics", "Basic c2NyYXBlcjpzM2NyZXQ=", http.StatusUnauthorized},
		{"a token the API server does not know", http.MethodGet, "/metrics", "Bearer not-a-token", http.StatusUnauthorized},
		{"a user not allowed to read metrics", http.MethodGet, "/metrics", "Bearer " + stranger, http.StatusForbidden},
		{"the scraper, another verb", http.MethodPost, "/metrics", "Bearer " + scraper, http.StatusForbidden},
		{"the scraper, another path", http.MethodGet, "/debug", "Bearer " + scraper, http.StatusForbidden},
		{"the scraper", http.MethodGet, "/metrics", "Bearer " + scraper, http.StatusOK},
	}
	for _, c := range cases {
		status, body := request(t, server.URL, c.method, c.path, c.authorization)
		g.Expect(status).To(Equal(c.status), c.name)
		if c.status == http.StatusOK {
			g.Expect(body).To(Equal("kraan_metrics 1\n"), c.name)
		} else {
			g.Expect(body).NotTo(ContainSubstring("kraan_metrics"), c.name)
		}
		g.Expect(body).NotTo(ContainSubstring(scraper), "a response never quotes a token")
		g.Expect(body).NotTo(ContainSubstring(stranger), "a response never quotes a token")
	}

	reviews := counting.count.Load()
	g.Expect(reviews).To(BeNumerically(">", 0))
	for range 5 {
		status, _ := request(t, server.URL, http.MethodGet, "/metrics", "Bearer "+scraper)
		g.Expect(status).To(Equal(http.StatusOK))
		status, _ = request(t, server.URL, http.MethodGet, "/metrics", "Bearer "+stranger)
		g.Expect(status).To(Equal(http.StatusForbidden))
	}
	g.Expect(counting.count.Load()).To(Equal(reviews), "answers are cached: repeated scrapes send no review")
}

func serviceAccountToken(t *testing.T, clientset kubernetes.Interface, ns, name string) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	_, err := clientset.CoreV1().ServiceAccounts(ns).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	tr, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

func request(t *testing.T, url, method, path, authorization string) (int, string) {
	t.Helper()
	g := NewWithT(t)
	req, err := http.NewRequestWithContext(t.Context(), method, url+path, strings.NewReader(""))
	g.Expect(err).NotTo(HaveOccurred())
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(body)
}
