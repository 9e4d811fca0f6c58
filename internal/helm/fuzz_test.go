package helm

import (
	"regexp"
	"strings"
	"testing"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
)

// simplePath is a targetPath of plain keys, e.g. "auth.token".
var simplePath = regexp.MustCompile(`^[a-z]+(\.[a-z]+)*$`)

// composeAt runs ComposeValues with one Secret entry holding value at path.
func composeAt(path, value string) (map[string]any, error) {
	src := ValuesSource{Ref: kraanv1.ValuesReference{Kind: "Secret", Name: "creds", ValuesKey: "v", TargetPath: path},
		Data: map[string][]byte{"v": []byte(value)}}
	return ComposeValues([]ValuesSource{src}, nil)
}

// FuzzComposeValuesTargetPath feeds arbitrary targetPaths and Secret values
// to ComposeValues. It proves that composing never panics, that a value Flux
// does not type (not quoted, not a plain scalar) lands byte for byte as one
// string at a simple path (no `--set` syntax is read in it), and that an
// error message never quotes the value, which may be a secret.
func FuzzComposeValuesTargetPath(f *testing.F) {
	f.Add("auth.token", "s3cr3t")
	f.Add("auth.password", "p,auth.admin=true")
	f.Add("k", `{a,b}\`)
	f.Add("list[1]", "v,w")
	f.Add(`annotations.example\.com/key`, "x[0].y]=")
	f.Add("a[", "CANARY-4f1d,x=y")
	f.Add("a.b.c", "")
	f.Fuzz(func(t *testing.T, path, value string) {
		values, err := composeAt(path, value)
		if err != nil {
			// The value may appear through the fixed text or the quoted
			// path; it leaks only if the message without it lacks it.
			if len(value) >= 8 && !strings.Contains(path, value) && strings.Contains(err.Error(), value) {
				if _, without := composeAt(path, ""); without == nil || !strings.Contains(without.Error(), value) {
					t.Fatalf("targetPath %q: the error quotes the value: %v", path, err)
				}
			}
			return
		}
		// Flux types quoted values and plain scalars (true, 3); every other
		// value must land as it is.
		if !simplePath.MatchString(path) || targetPathValue(value) != any(value) {
			return
		}
		var got any = values
		for _, key := range strings.Split(path, ".") {
			m, _ := got.(map[string]any)
			got = m[key]
		}
		s, ok := got.(string)
		if !ok {
			t.Fatalf("targetPath %q: value %+q set as %#v, not a string", path, value, got)
		}
		if s != value {
			t.Fatalf("targetPath %q: value %+q set as %+q", path, value, s)
		}
	})
}
