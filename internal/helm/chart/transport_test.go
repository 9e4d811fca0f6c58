package chart

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

func TestCappedTransport(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 3<<20)
	storage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(big)
	}))
	t.Cleanup(storage.Close)
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/v2/charts/app/blobs/sha256:abc":
			http.Redirect(w, req, storage.URL+"/some/bucket/object", http.StatusTemporaryRedirect)
		case "/v2/charts/app/manifests/1.0.0":
			w.Header().Set("Content-Length", "3145728")
			_, _ = w.Write(big)
		default:
			_, _ = w.Write(big)
		}
	}))
	t.Cleanup(registry.Close)
	client := &http.Client{Transport: &cappedTransport{base: http.DefaultTransport, metadataLimit: 1 << 20, blobLimit: 4 << 20}}
	tests := []struct {
		name, path, message string
	}{
		{name: "a blob redirected to storage gets the blob cap", path: "/v2/charts/app/blobs/sha256:abc"},
		{name: "a manifest declaring more than the cap", path: "/v2/charts/app/manifests/1.0.0",
			message: "declares 3 MiB, over the 1 MiB limit (--max-oci-manifest-size)"},
		{name: "another answer sending more than the cap", path: "/token",
			message: "is larger than the 1 MiB limit (--max-oci-manifest-size)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var data []byte
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, registry.URL+tt.path, nil)
			g.Expect(err).NotTo(HaveOccurred())
			resp, err := client.Do(req)
			if err == nil {
				data, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if tt.message == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(data).To(HaveLen(len(big)))
				return
			}
			var limit *LimitError
			g.Expect(errors.As(err, &limit)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.message))
		})
	}
}
