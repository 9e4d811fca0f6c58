package redact

import (
	"encoding/base64"
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRedactor_MasksValuesAndTheirEncodings(t *testing.T) {
	g := NewWithT(t)
	r := &Redactor{}
	r.Add("hunter22", "on") // "on" is too short to mask
	r.AddSecretData(map[string][]byte{"values.yaml": []byte("db:\n  password: s3cr3t-pw\n  port: 5432\n")})
	cases := map[string]string{
		"password hunter22 rejected":                                       "password ***** rejected",
		"encoded " + base64.StdEncoding.EncodeToString([]byte("hunter22")): "encoded *****",
		"template: db.password is s3cr3t-pw":                               "template: db.password is *****",
		"port 5432":                                                        "port *****",
		"switch on":                                                        "switch on",
		// The document's keys stay readable: its lines are not masked whole.
		"values: port: 5432": "values: port: *****",
	}
	for in, want := range cases {
		g.Expect(r.String(in)).To(Equal(want), in)
	}
}

func TestRedactor_MultiLineValuesAreMaskedLineByLine(t *testing.T) {
	g := NewWithT(t)
	r := &Redactor{}
	r.AddSecretData(map[string][]byte{"tls.key": []byte("-----BEGIN KEY-----\nMIIEabcdefgh\nijklmnopqrst\n-----END KEY-----\n")})
	g.Expect(r.String("line 2 was ijklmnopqrst")).To(Equal("line 2 was *****"))
}

func TestRedactor_AddObjects(t *testing.T) {
	g := NewWithT(t)
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"data":       map[string]any{"token": base64.StdEncoding.EncodeToString([]byte("tok-123456"))},
		"stringData": map[string]any{"pin": int64(987654321)},
	}}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"data": map[string]any{"plain": "visible-value"}}}
	r := &Redactor{}
	r.AddObjects([]*unstructured.Unstructured{secret, cm})
	msg := fmt.Sprintf("got &value.valueUnstructured{Value:987654321}; tok-123456; %s; visible-value",
		base64.StdEncoding.EncodeToString([]byte("tok-123456")))
	g.Expect(r.String(msg)).To(Equal("got &value.valueUnstructured{Value:*****}; *****; *****; visible-value"))
}

func TestRedactor_ErrorKeepsTheChain(t *testing.T) {
	g := NewWithT(t)
	sentinel := errors.New("invalid: hunter22")
	r := &Redactor{}
	r.Add("hunter22")
	err := r.Error(fmt.Errorf("applying: %w", sentinel))
	g.Expect(err.Error()).To(Equal("applying: invalid: *****"))
	g.Expect(errors.Is(err, sentinel)).To(BeTrue())
	g.Expect(r.Error(nil)).To(BeNil())
	var nilRedactor *Redactor
	g.Expect(nilRedactor.String("hunter22")).To(Equal("hunter22"))
}
