package helm

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

func TestComposeValues_MergesInFluxOrder(t *testing.T) {
	g := NewWithT(t)
	sources := []ValuesSource{
		{Ref: kraanv1.ValuesReference{Kind: "ConfigMap", Name: "base"},
			Data: map[string][]byte{"values.yaml": []byte("replicas: 1\nimage: {tag: a, repo: r}\n")}},
		{Ref: kraanv1.ValuesReference{Kind: "Secret", Name: "override", ValuesKey: "custom"},
			Data: map[string][]byte{"custom": []byte("image: {tag: b}\n")}},
		{Ref: kraanv1.ValuesReference{Kind: "Secret", Name: "token", ValuesKey: "token", TargetPath: "auth.token"},
			Data: map[string][]byte{"token": []byte("s3cr3t")}},
		{Ref: kraanv1.ValuesReference{Kind: "ConfigMap", Name: "absent", Optional: true}},
	}
	values, err := ComposeValues(sources, &apiextensionsv1.JSON{Raw: []byte(`{"replicas": 3}`)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(values).To(Equal(map[string]any{
		"replicas": float64(3), // inline values win
		"image":    map[string]any{"tag": "b", "repo": "r"},
		"auth":     map[string]any{"token": "s3cr3t"},
	}))
}

func TestComposeValues_Errors(t *testing.T) {
	cases := []struct {
		name string
		src  ValuesSource
		want string
	}{
		{"missing object", ValuesSource{Ref: kraanv1.ValuesReference{Kind: "ConfigMap", Name: "gone"}},
			"values from ConfigMap gone key values.yaml: ConfigMap not found"},
		{"missing key", ValuesSource{Ref: kraanv1.ValuesReference{Kind: "Secret", Name: "s", ValuesKey: "k"}, Data: map[string][]byte{}},
			"values from Secret s key k: key not found"},
		{"invalid YAML", ValuesSource{Ref: kraanv1.ValuesReference{Kind: "ConfigMap", Name: "bad"}, Data: map[string][]byte{"values.yaml": []byte("a: [1,")}},
			"values from ConfigMap bad key values.yaml: invalid YAML"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := ComposeValues([]ValuesSource{tc.src}, nil)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			var ve *ValuesError
			g.Expect(errors.As(err, &ve)).To(BeTrue())
		})
	}
}
