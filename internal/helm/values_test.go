package helm

import (
	"errors"
	"strings"
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

// TestComposeValues_TargetPathSetsTheLiteralValue: whatever a Secret holds is
// set byte for byte at targetPath and never read as `--set` syntax (a comma
// would split it; `,key=value` would inject a key); only Flux's typing
// applies: quotes make a string, a plain true/false/null/integer is typed.
func TestComposeValues_TargetPathSetsTheLiteralValue(t *testing.T) {
	long := strings.Repeat("x,=[]{}.\\", 10000)
	cases := []struct {
		name, path, value string
		want              map[string]any
	}{
		{"plain", "auth.token", "s3cr3t", map[string]any{"auth": map[string]any{"token": "s3cr3t"}}},
		{"comma", "auth.password", "a,b", map[string]any{"auth": map[string]any{"password": "a,b"}}},
		{"injection", "auth.password", "p,auth.admin=true", map[string]any{"auth": map[string]any{"password": "p,auth.admin=true"}}},
		{"equals", "k", "a=b==", map[string]any{"k": "a=b=="}},
		{"brackets and dots", "k", "x[0].y]", map[string]any{"k": "x[0].y]"}},
		{"leading brace", "k", "{a,b}", map[string]any{"k": "{a,b}"}},
		{"backslashes", "k", `a\,b\\c\`, map[string]any{"k": `a\,b\\c\`}},
		{"double quotes make a string", "k", `"quoted, still"`, map[string]any{"k": "quoted, still"}},
		{"single-quoted number stays a string", "replicas", "'3'", map[string]any{"replicas": "3"}},
		{"integer is typed, as Flux does", "replicas", "3", map[string]any{"replicas": int64(3)}},
		{"leading zero stays a string", "k", "0123", map[string]any{"k": "0123"}},
		{"boolean is typed", "k", "true", map[string]any{"k": true}},
		{"null is typed", "k", "null", map[string]any{"k": nil}},
		{"decimal stays a string", "k", "1.5", map[string]any{"k": "1.5"}},
		{"newlines", "tls.crt", "-----BEGIN-----\nabc\n-----END-----\n", map[string]any{"tls": map[string]any{"crt": "-----BEGIN-----\nabc\n-----END-----\n"}}},
		{"unicode", "k", "pässwörd 🔑 ,", map[string]any{"k": "pässwörd 🔑 ,"}},
		{"empty", "k", "", map[string]any{"k": ""}},
		{"list index", "list[1]", "v,w", map[string]any{"list": []any{nil, "v,w"}}},
		{"escaped dot in the path", `annotations.example\.com/key`, "v", map[string]any{"annotations": map[string]any{"example.com/key": "v"}}},
		{"very long", "k", long, map[string]any{"k": long}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			src := ValuesSource{Ref: kraanv1.ValuesReference{Kind: "Secret", Name: "s", ValuesKey: "v", TargetPath: tc.path},
				Data: map[string][]byte{"v": []byte(tc.value)}}
			values, err := ComposeValues([]ValuesSource{src}, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(values).To(Equal(tc.want))
		})
	}
}

// TestComposeValues_MalformedTargetPath names the entry and the path, never
// the value.
func TestComposeValues_MalformedTargetPath(t *testing.T) {
	for _, path := range []string{"a[", "a[x]", "a,b", "a]b["} {
		t.Run(path, func(t *testing.T) {
			g := NewWithT(t)
			src := ValuesSource{Ref: kraanv1.ValuesReference{Kind: "Secret", Name: "creds", ValuesKey: "v", TargetPath: path},
				Data: map[string][]byte{"v": []byte("CANARY-4f1d,x=y")}}
			_, err := ComposeValues([]ValuesSource{src}, nil)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring("Secret creds key v"))
			g.Expect(err.Error()).To(ContainSubstring("targetPath"))
			g.Expect(err.Error()).NotTo(ContainSubstring("CANARY"))
		})
	}
}

// TestComposeValues_LiteralKeepsAString: with literal, a value that would be
// typed (true, 42, null) or unquoted ('x') stays the exact string.
func TestComposeValues_LiteralKeepsAString(t *testing.T) {
	for _, value := range []string{"true", "42", "null", "'quoted'", `"double"`, "a,b=c"} {
		t.Run(value, func(t *testing.T) {
			g := NewWithT(t)
			src := ValuesSource{Ref: kraanv1.ValuesReference{Kind: "Secret", Name: "s", ValuesKey: "v", TargetPath: "a.b", Literal: true},
				Data: map[string][]byte{"v": []byte(value)}}
			values, err := ComposeValues([]ValuesSource{src}, nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(values).To(Equal(map[string]any{"a": map[string]any{"b": value}}))
		})
	}
}
