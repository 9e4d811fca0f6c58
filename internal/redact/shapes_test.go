package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// malformedSecret is a layer Secret whose stringData values are written in
// every shape the API server refuses: a map, a list, a number, a string
// holding nested JSON, and base64 of each.
func malformedSecret(t *testing.T) (*unstructured.Unstructured, []string) {
	t.Helper()
	canary := func(what string) string { return "canary-" + what + "-7f3a9c" }
	jsonDoc := `{"outer":{"inner":"` + canary("nested") + `"}}`
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	doc := fmt.Sprintf(`
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: kube-system}
stringData:
  map: {password: %s}
  list: [%s, {deep: %s}]
  number: 700000000123
  float: 3.14159265358979
  nested: '%s'
  b64map: %s
  b64list: %s
  b64nested: %s
data:
  encoded: %s
`, canary("map"), canary("list"), canary("deep"), jsonDoc,
		b64(`{"password":"`+canary("b64map")+`"}`), b64(`["`+canary("b64list")+`"]`), b64(b64(jsonDoc)),
		b64(`{"k":"`+canary("data")+`"}`))
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	return obj, []string{canary("map"), canary("list"), canary("deep"), canary("nested"), canary("b64map"),
		canary("b64list"), canary("data"), "700000000123", "3.14159265358979"}
}

func TestRedactor_AddObjects_MasksEveryShape(t *testing.T) {
	g := NewWithT(t)
	secret, canaries := malformedSecret(t)
	r := &Redactor{}
	r.AddObjects([]*unstructured.Unstructured{secret})
	stringData := secret.Object["stringData"].(map[string]any)
	// The ways a message quotes a value: Go's %v and %#v (the API server's
	// "got map[string]interface {}{…}"), JSON, and each leaf alone.
	quoted := make([]string, 0, 4*len(stringData))
	for _, v := range stringData {
		b, _ := json.Marshal(v)
		quoted = append(quoted, fmt.Sprint(v), fmt.Sprintf("%#v", v), string(b),
			fmt.Sprintf(".stringData.x: expected string, got &value.valueUnstructured{Value:%#v}", v))
	}
	msg := r.String(strings.Join(quoted, "\n"))
	for _, c := range canaries {
		g.Expect(msg).NotTo(ContainSubstring(c))
	}
	g.Expect(msg).To(ContainSubstring("expected string"), "the rest of the message stays readable")
}

func TestRedactor_AddValue_QuotedForms(t *testing.T) {
	g := NewWithT(t)
	r := &Redactor{}
	r.AddValue("line one\n\"quoted\" canary-q-1234")
	g.Expect(r.String(fmt.Sprintf("got %q", "line one\n\"quoted\" canary-q-1234"))).To(Equal("got \"*****\""))
}

func TestSecretError_NamesTheSecretAndFieldNeverTheValue(t *testing.T) {
	g := NewWithT(t)
	secret, canaries := malformedSecret(t)
	// What the API server answers a server-side apply whose stringData value
	// is a map (structured-merge-diff's type check).
	raw := apierrors.NewInternalError(fmt.Errorf(`failed to create typed patch object (/v1, Kind=Secret) kube-system/db: `+
		`.stringData.map: expected string, got &value.valueUnstructured{Value:map[string]interface {}{"password":%q}}`, canaries[0]))
	err := SecretError(secret, fmt.Errorf("applying: %w", raw))
	g.Expect(err.Error()).To(Equal("Secret kube-system/db: invalid value at stringData.map: expected string"))
	g.Expect(apierrors.IsInternalError(err)).To(BeTrue(), "classified as the original")

	// Structured causes keep their field and class, never their message.
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "db", nil)
	invalid.ErrStatus.Details.Causes = []metav1.StatusCause{
		{Type: metav1.CauseTypeFieldValueInvalid, Field: "data[encoded]", Message: "Invalid value: " + canaries[6]},
		{Type: metav1.CauseTypeFieldValueInvalid, Field: "stringData[not there]", Message: canaries[1]},
		{Type: metav1.CauseTypeFieldValueInvalid, Field: "data", Message: "field is immutable"},
	}
	invalid.ErrStatus.Message = "Secret \"db\" is invalid: " + canaries[6]
	err = SecretError(secret, invalid)
	g.Expect(err.Error()).To(Equal("Secret kube-system/db: invalid value at data.encoded; field is immutable at data"))
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue())

	// A path that is not in the Secret is a fragment of a value: dropped.
	forged := apierrors.NewBadRequest(".canary-map-7f3a9c: expected string")
	err = SecretError(secret, forged)
	g.Expect(err.Error()).To(HavePrefix("Secret kube-system/db: refused by the API server (BadRequest); its message is withheld"))
	for _, c := range canaries {
		g.Expect(err.Error()).NotTo(ContainSubstring(c))
	}

	forbidden := SecretError(secret, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "db", fmt.Errorf("webhook says %s", canaries[0])))
	g.Expect(forbidden.Error()).To(Equal("Secret kube-system/db: refused by the API server (Forbidden); its message is withheld " +
		"as it may quote the Secret's data: the operator may not write it, or an admission webhook denied it"))
	g.Expect(apierrors.IsForbidden(forbidden)).To(BeTrue())

	// Not a Secret, or not from the API server: unchanged.
	cm := &unstructured.Unstructured{Object: map[string]any{"kind": "ConfigMap"}}
	g.Expect(SecretError(cm, raw)).To(BeIdenticalTo(raw))
	plain := fmt.Errorf("connection refused")
	g.Expect(SecretError(secret, plain)).To(BeIdenticalTo(plain))
}

func TestPathSegments(t *testing.T) {
	g := NewWithT(t)
	g.Expect(pathSegments(".stringData.password")).To(Equal([]string{"stringData", "password"}))
	g.Expect(pathSegments("data[bad key]")).To(Equal([]string{"data", "bad key"}))
	g.Expect(pathSegments(`metadata.labels["a.b/c"].x`)).To(Equal([]string{"metadata", "labels", "a.b/c", "x"}))
	g.Expect(pathSegments("data[unclosed")).To(BeNil())
}
