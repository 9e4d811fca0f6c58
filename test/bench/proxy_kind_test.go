package bench

import (
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRequestKind_namesVerbAndResource(t *testing.T) {
	for _, tc := range []struct {
		method, target, want string
	}{
		{method: "GET", target: "/api/v1/namespaces/x/secrets?labelSelector=owner%3Dhelm", want: "LIST secrets"},
		{method: "GET", target: "/api/v1/namespaces/x/secrets/y", want: "GET secrets"},
		{method: "GET", target: "/api/v1/namespaces/x", want: "GET namespaces"},
		{method: "GET", target: "/apis/apps/v1/deployments?watch=true", want: "WATCH apps/deployments"},
		{method: "PATCH", target: "/apis/kraan.io/v1alpha1/namespaces/x/helmreleases/r/status", want: "PATCH kraan.io/helmreleases/status"},
		{method: "GET", target: "/apis/apps/v1", want: "GET apps/(discovery)"},
		{method: "GET", target: "/version", want: "GET /version"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			NewWithT(t).Expect(requestKind(httptest.NewRequestWithContext(t.Context(), tc.method, tc.target, nil))).To(Equal(tc.want))
		})
	}
}
