package imagebuild

import (
	"bytes"
	"encoding/pem"
	"io/fs"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// NonRoot is the user and group the operator runs as: distroless' nonroot,
// numeric so that a Pod's runAsNonRoot can verify it without /etc/passwd.
const NonRoot = 65532

// CACertificatesPath is where Go (and most TLS stacks) look for the system's
// CA bundle on Linux.
const CACertificatesPath = "etc/ssl/certs/ca-certificates.crt"

// BaseEntries is the minimal base of the operator image: no shell, no package
// manager, only what a static Go binary running as 65532 needs — passwd and
// group entries (so the user has a name and a home), the CA certificates the
// operator trusts when it fetches charts and sources over HTTPS, and a
// world-writable /tmp (Helm writes temporary files there).
func BaseEntries() []Entry {
	return []Entry{
		Dir("etc", 0o755, 0, 0),
		File("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\n"+
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")),
		File("etc/group", 0o644, []byte("root:x:0:\nnonroot:x:65532:\n")),
		Dir("etc/ssl", 0o755, 0, 0),
		Dir("etc/ssl/certs", 0o755, 0, 0),
		File(CACertificatesPath, 0o644, CABundle()),
		Dir("home", 0o755, 0, 0),
		Dir("home/nonroot", 0o700, NonRoot, NonRoot),
		Dir("root", 0o700, 0, 0),
		// Sticky: anyone may create files in /tmp, only their owner may remove them.
		Dir("tmp", fs.ModeSticky|0o777, 0, 0),
	}
}

// BaseLayer is BaseEntries as a layer.
func BaseLayer(mtime time.Time) (v1.Layer, error) {
	return NewLayer(BaseEntries(), mtime)
}

// CABundle is Mozilla's root store, as shipped in the pinned module
// golang.org/x/crypto/x509roots/fallback, as PEM. Roots that NSS trusts only
// for certificates issued before a date are left out: a PEM bundle cannot say
// so, and trusting them for newer certificates would be wider than Mozilla's
// trust. The module is pinned in go.mod, so the bundle — and the image digest —
// changes only when someone updates it.
func CABundle() []byte {
	var buf bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return buf.Bytes()
}
