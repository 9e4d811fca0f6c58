package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Push uploads the image or index of the OCI layout dir to ref (repository
// and tag) and returns the reference by digest it is now pullable as.
// Credentials come from the Docker config (~/.docker/config.json,
// DOCKER_CONFIG), as `docker login` or `crane auth login` write it. Registries
// on localhost or 127.0.0.1 are spoken to over plain HTTP, as every registry
// client does. The tag is written last, after every blob and manifest, so a
// failed push never leaves the tag pointing at a partial image.
//
// opts add to the remote options (a test registry's TLS transport).
func Push(ctx context.Context, dir, ref string, opts ...remote.Option) (string, error) {
	a, err := ReadLayout(dir)
	if err != nil {
		return "", err
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return "", fmt.Errorf("pushing %s: %q is not an image reference with a tag: %w", dir, ref, err)
	}
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if a.Index != nil {
		err = remote.WriteIndex(tag, a.Index, opts...)
	} else {
		err = remote.Write(tag, a.Image, opts...)
	}
	if err != nil {
		return "", fmt.Errorf("pushing %s to %s failed (check IMAGE_REGISTRY, that the registry is reachable and that you are logged in to it): %s", dir, ref, pushError(err))
	}
	return tag.Context().Digest(a.Descriptor.Digest.String()).String(), nil
}

// pushError says what the registry answered: its status and the message of
// its first OCI error, never the body of an HTML error page some registries
// and proxies send; other errors (connection refused, TLS) as their first line.
func pushError(err error) string {
	var terr *transport.Error
	if errors.As(err, &terr) {
		msg := fmt.Sprintf("the registry answered %d %s", terr.StatusCode, http.StatusText(terr.StatusCode))
		if terr.Request != nil {
			msg += " to " + terr.Request.Method + " " + terr.Request.URL.Path
		}
		if len(terr.Errors) > 0 {
			msg += ": " + string(terr.Errors[0].Code) + " " + terr.Errors[0].Message
		}
		return msg
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
