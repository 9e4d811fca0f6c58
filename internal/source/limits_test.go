package source

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestStore_Fetch_fileOverTheFileLimit: one file over MaxFileBytes fails the
// artifact before it is written, naming the file and the flag to raise.
func TestStore_Fetch_fileOverTheFileLimit(t *testing.T) {
	g := NewWithT(t)
	srv := newArtifactServer(t)
	s, _ := newTestStore(t, Options{MaxFileBytes: 1 << 10})
	a := srv.add("rev1", tarball(t, file("small.yaml", "ok"), file("docs/big.bin", strings.Repeat("x", 1<<10+1))))

	_, err := s.Fetch(context.Background(), a)

	var tooLarge *TooLargeError
	g.Expect(errors.As(err, &tooLarge)).To(BeTrue(), "got %v", err)
	g.Expect(tooLarge.Limit).To(Equal(LimitFileBytes))
	g.Expect(err).To(MatchError(ContainSubstring(
		`artifact file "docs/big.bin" exceeds the file size limit of 1024 (--max-artifact-file-size)`)))
	g.Expect(entries(t, s.Root())).To(BeEmpty(), "nothing is left in the store")
}

func TestStore_Fetch_defaultFileLimit(t *testing.T) {
	g := NewWithT(t)
	g.Expect(withDefaults(Options{}).MaxFileBytes).To(Equal(DefaultMaxFileBytes))
	g.Expect(withDefaults(Options{MaxUntarBytes: 1 << 20}).MaxFileBytes).To(Equal(int64(1<<20)),
		"no file may be larger than the whole")
}

// TestUntar_decompressedStreamIsBounded: extended headers, which archive/tar
// reads (up to 1 MiB each) and the extractor drops, count too: an archive of
// a few small files with 512 KiB headers is stopped once the stream exceeds
// the files' limit and each entry's allowance, not decompressed in full.
func TestUntar_decompressedStreamIsBounded(t *testing.T) {
	g := NewWithT(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		g.Expect(tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: 1, Mode: 0o644,
			PAXRecords: map[string]string{"comment": strings.Repeat("x", 512<<10)}})).To(Succeed())
		_, _ = tw.Write([]byte("x"))
	}
	g.Expect(tw.Close()).To(Succeed())
	body := gzipBytes(t, buf.Bytes())
	lim := limits{maxBytes: 64 << 10, maxFiles: 10}

	_, err := untar(bytes.NewReader(body), t.TempDir(), lim)

	var tooLarge *TooLargeError
	g.Expect(errors.As(err, &tooLarge)).To(BeTrue(), "got %v", err)
	g.Expect(tooLarge.Limit).To(Equal(LimitUntarBytes))
	g.Expect(err).To(MatchError(ContainSubstring("(--max-artifact-size)")))
}

// TestCappedReader_stopsOneBytePastTheLimit: the decompressor is never asked
// for more than the limit and one byte.
func TestCappedReader_stopsOneBytePastTheLimit(t *testing.T) {
	g := NewWithT(t)
	src := bytes.NewReader(make([]byte, 1<<20))
	c := &cappedReader{r: src, max: 1000}

	n, err := bytes.NewBuffer(nil).ReadFrom(c)

	g.Expect(err).To(MatchError(errStreamLimit))
	g.Expect(n).To(Equal(int64(1001)))
	g.Expect(src.Len()).To(Equal(1<<20 - 1001))
}
