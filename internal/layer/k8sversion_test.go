package layer

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestCheckK8sVersion(t *testing.T) {
	tests := []struct {
		name     string
		server   string
		required string
		wantMet  bool
		wantMsg  string
	}{
		{name: "no requirement", server: "v1.16.0", required: "", wantMet: true, wantMsg: "no minimum"},
		{name: "newer minor", server: "v1.37.2", required: "v1.30", wantMet: true, wantMsg: "satisfies"},
		{name: "equal", server: "v1.30.0", required: "v1.30", wantMet: true},
		{name: "equal patch", server: "v1.30.2", required: "v1.30.2", wantMet: true},
		{name: "older patch", server: "v1.30.1", required: "v1.30.2", wantMet: false, wantMsg: "requires v1.30.2 or later"},
		{name: "older minor", server: "v1.29.9", required: "v1.30", wantMet: false,
			wantMsg: "AddonsLayer is waiting for the required K8sVersion: the API server is v1.29.9"},
		{name: "kraan test: v1.16 on v1.15", server: "v1.15.3", required: "v1.16", wantMet: false},
		{name: "kraan test: v1.16 on v1.16.9", server: "v1.16.9", required: "v1.16", wantMet: true},
		{name: "eks pre-release equal minor", server: "v1.31.0-eks-abc", required: "v1.31", wantMet: true},
		{name: "eks pre-release equal patch", server: "v1.31.0-eks-abc", required: "v1.31.0", wantMet: true},
		{name: "gke build", server: "v1.29.3-gke.1093000", required: "v1.29.3", wantMet: true},
		{name: "k3s build metadata", server: "v1.30.2+k3s1", required: "v1.30.2", wantMet: true},
		{name: "pre-release still older minor", server: "v1.30.9-eks-abc", required: "v1.31", wantMet: false},
		{name: "required without v", server: "v1.30.0", required: "1.30", wantMet: true},
		{name: "major only", server: "v1.30.0", required: "v2", wantMet: false},
		{name: "invalid required", server: "v1.30.0", required: "latest", wantMet: false,
			wantMsg: `prereqs.k8sVersion "latest" is not a version`},
		{name: "unreadable server", server: "", required: "v1.30", wantMet: false,
			wantMsg: "cannot read the API server version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			met, msg := CheckK8sVersion(tt.server, tt.required)
			g.Expect(met).To(Equal(tt.wantMet))
			g.Expect(msg).NotTo(BeEmpty())
			g.Expect(msg).To(ContainSubstring(tt.wantMsg))
		})
	}
}

// TestCheckK8sVersion_WithOrWithoutV_SameAnswer: `1.16` and `v1.16` are the
// same version. Kraan's own samples write "1.16" and its CI data "v1.16"; a
// layer must wait, or go, the same whichever a user copied.
func TestCheckK8sVersion_WithOrWithoutV_SameAnswer(t *testing.T) {
	servers := []string{"v1.15.3", "v1.16.0", "v1.16.9", "v1.16.1-eks-abc", "v1.30.2+k3s1", "v1.31.0-gke.100", "v2.0.0"}
	required := []string{"1.16", "1.16.2", "1.31", "1.31.0", "2", "1.16.0-fideks"}
	for _, server := range servers {
		for _, bare := range required {
			t.Run(server+" requires "+bare, func(t *testing.T) {
				g := NewWithT(t)
				metBare, msgBare := CheckK8sVersion(server, bare)
				metV, msgV := CheckK8sVersion(server, "v"+bare)
				g.Expect(metBare).To(Equal(metV), "%q says %q, %q says %q", bare, msgBare, "v"+bare, msgV)
				g.Expect(msgBare).NotTo(ContainSubstring("is not a version"))
			})
		}
	}
}
