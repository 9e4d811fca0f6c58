package source

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// download fetches the tarball into a temporary file inside the root and
// returns its path once its digest is verified. Verifying before extracting
// means bytes that are not the published artifact never reach the untar code.
func (s *Store) download(ctx context.Context, a Artifact, d digest) (string, error) {
	if a.Size != nil && *a.Size > s.opts.MaxDownloadBytes {
		return "", &TooLargeError{Limit: LimitDownloadBytes, Max: s.opts.MaxDownloadBytes}
	}
	u, err := s.artifactURL(a.URL)
	if err != nil {
		return "", err
	}
	body, err := s.get(ctx, u)
	if err != nil {
		return "", err
	}
	defer func() { _ = body.Close() }()
	file, got, err := s.save(body, d)
	if err != nil {
		return "", fmt.Errorf("downloading artifact %s: %w", redact(u), err)
	}
	if got != d.String() {
		_ = os.Remove(file)
		return "", &DigestMismatchError{URL: redact(u), Revision: a.Revision, Expected: a.Digest, Got: got}
	}
	return file, nil
}

// artifactURL parses the artifact URL and applies Options.HostOverride.
func (s *Store) artifactURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidArtifact, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: artifact URL %s is not http(s)", ErrInvalidArtifact, redact(u))
	}
	if s.opts.HostOverride != "" {
		u.Host = s.opts.HostOverride
	}
	return u, nil
}

// get sends the request and returns the body of a 200 response.
func (s *Store) get(ctx context.Context, u *url.URL) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// *url.Error repeats the unredacted URL; say it once, redacted.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, fmt.Errorf("downloading artifact %s: %w", redact(u), err)
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, &HTTPError{URL: redact(u), StatusCode: resp.StatusCode, Status: resp.Status}
	}
	return resp.Body, nil
}

// save copies body into a temporary file while hashing it and returns the
// file's path and digest. At most MaxDownloadBytes+1 bytes are read, so an
// endless body cannot fill the disk.
func (s *Store) save(body io.Reader, d digest) (file, got string, err error) {
	f, err := os.CreateTemp(s.root, tmpPrefix+d.key()+"-*.tar.gz")
	if err != nil {
		return "", "", err
	}
	h := d.newHash()
	limit := s.opts.MaxDownloadBytes
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(body, limit+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit {
		err = &TooLargeError{Limit: LimitDownloadBytes, Max: limit}
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", "", err
	}
	return f.Name(), d.algo + ":" + hex.EncodeToString(h.Sum(nil)), nil
}

// extract untars the verified archive into a temporary directory and
// publishes it as d's directory. It returns the skipped link entries.
func (s *Store) extract(archive string, d digest) ([]string, error) {
	tmp, err := os.MkdirTemp(s.root, tmpPrefix+d.key()+"-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // nothing left once renamed
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	skipped, err := untar(f, tmp, limits{maxBytes: s.opts.MaxUntarBytes, maxFiles: int64(s.opts.MaxFiles),
		maxFileBytes: s.opts.MaxFileBytes})
	_ = f.Close()
	if err != nil {
		return nil, err
	}
	return skipped, s.publish(tmp, d, skipped)
}

// publish renames the extracted tree into place and then writes the marker.
// Whatever is in the way can only be an incomplete leftover of a crash (a
// complete directory is never fetched again), so no reader holds it. Its
// marker goes first so a crash mid-way never leaves a marker beside a
// partial tree.
func (s *Store) publish(tmp string, d digest, skipped []string) error {
	if err := os.Remove(s.marker(d)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.RemoveAll(s.dir(d)); err != nil {
		return fmt.Errorf("removing incomplete artifact directory: %w", err)
	}
	// MkdirTemp creates 0700; match the permissions of extracted directories.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.dir(d)); err != nil {
		return fmt.Errorf("publishing artifact directory: %w", err)
	}
	return s.writeMarker(d, skipped)
}

// writeMarker writes <key>.verified atomically (temporary file + rename): the
// digest, then the names of the link entries extraction skipped, one a line,
// so that SkippedLinks can still report them after a restart.
// No fsync: a process crash loses no written data, which is the case the
// marker is for. Surviving power loss would need an fsync of every
// extracted file; the store is a cache of data source-controller still
// serves, so that cost is not worth paying.
func (s *Store) writeMarker(d digest, skipped []string) error {
	f, err := os.CreateTemp(s.root, tmpPrefix+d.key()+"-marker-")
	if err != nil {
		return err
	}
	_, err = f.WriteString(strings.Join(append([]string{d.String()}, skipped...), "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), s.marker(d))
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("writing artifact marker: %w", err)
	}
	return nil
}
