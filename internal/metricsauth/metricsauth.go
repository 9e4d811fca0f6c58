// Package metricsauth lets only the callers the API server vouches for read
// the operator's metrics endpoint: a bearer token the API server
// authenticates (TokenReview) for a user it authorizes for the request's
// non-resource path and verb (SubjectAccessReview), e.g. `get /metrics` from
// the ClusterRole metrics-reader.
//
// controller-runtime's filters package does the same through
// k8s.io/apiserver's delegating authenticator and authorizer, which bring
// CEL, gRPC and OpenTelemetry into the binary: about 19 MB of its 137 MB,
// resident in every operator pod for two API calls. This package makes those
// calls with client-go and caches their answers as that filter does.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long answers are kept: those of controller-runtime's filter, so a
// scraper costs the API server two requests a minute at most.
const (
	authenticatedTTL = time.Minute
	allowedTTL       = 5 * time.Minute
	deniedTTL        = 30 * time.Second
	// reviewTimeout bounds each review; a scrape waits no longer.
	reviewTimeout = 10 * time.Second
	// maxCached bounds each cache: a caller sending endless distinct tokens
	// costs reviews, never memory.
	maxCached = 1024
)

// Filter returns the filter for controller-runtime's metrics server
// (metricsserver.Options.FilterProvider).
func Filter(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationclient.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	g := &gate{
		tokens:    authn.TokenReviews(),
		access:    authz.SubjectAccessReviews(),
		users:     newCache[authenticationv1.UserInfo](),
		decisions: newCache[bool](),
	}
	return g.filter, nil
}

// gate authenticates and authorizes requests through the API server.
type gate struct {
	tokens    authenticationclient.TokenReviewInterface
	access    authorizationclient.SubjectAccessReviewInterface
	users     *cache[authenticationv1.UserInfo]
	decisions *cache[bool]
}

func (g *gate) filter(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearerToken(req)
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		user, ok, err := g.authenticate(req.Context(), token)
		if err != nil {
			// The error is the API server's; it never quotes the token.
			log.Error(err, "Authenticating a metrics request failed")
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		}
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		verb := strings.ToLower(req.Method)
		allowed, err := g.authorize(req.Context(), user, verb, req.URL.Path)
		if err != nil {
			log.Error(err, "Authorizing a metrics request failed", "user", user.Username)
			http.Error(w, "Authorization for user "+user.Username+" failed", http.StatusInternalServerError)
			return
		}
		if !allowed {
			log.V(4).Info("Metrics request denied", "user", user.Username, "verb", verb, "path", req.URL.Path)
			http.Error(w, "Authorization denied for user "+user.Username, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, req)
	}), nil
}

// bearerToken is the request's "Authorization: Bearer <token>".
func bearerToken(req *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(req.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "bearer") && token != ""
}

// authenticate asks the API server who token belongs to; ok is false when
// it does not authenticate it.
func (g *gate) authenticate(ctx context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	// The cache is keyed by the token's hash: no token stays in memory.
	key := fmt.Sprintf("%x", sha256.Sum256([]byte(token)))
	if user, ok := g.users.get(key); ok {
		return user, user.Username != "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	review, err := g.tokens.Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, false, fmt.Errorf("reviewing a token: %w", err)
	}
	user := authenticationv1.UserInfo{}
	if review.Status.Authenticated {
		user = review.Status.User
	}
	g.users.put(key, user, authenticatedTTL)
	return user, user.Username != "", nil
}

// authorize asks the API server whether user may take verb on the
// non-resource path.
func (g *gate) authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (bool, error) {
	key := strings.Join([]string{user.Username, user.UID, strings.Join(user.Groups, ","), verb, path}, "\x00")
	if allowed, ok := g.decisions.get(key); ok {
		return allowed, nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	review, err := g.access.Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("reviewing the access of user %s: %w", user.Username, err)
	}
	allowed := review.Status.Allowed && !review.Status.Denied
	ttl := deniedTTL
	if allowed {
		ttl = allowedTTL
	}
	g.decisions.put(key, allowed, ttl)
	return allowed, nil
}

// cache keeps answers until they expire, at most maxCached of them.
type cache[V any] struct {
	mu      sync.Mutex
	entries map[string]entry[V]
}

type entry[V any] struct {
	value   V
	expires time.Time
}

func newCache[V any]() *cache[V] { return &cache[V]{entries: map[string]entry[V]{}} }

func (c *cache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !time.Now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

func (c *cache[V]) put(key string, value V, ttl time.Duration) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCached {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		// Still full: forget any half; they are asked again when needed.
		for k := range c.entries {
			if len(c.entries) < maxCached/2 {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = entry[V]{value: value, expires: now.Add(ttl)}
}
