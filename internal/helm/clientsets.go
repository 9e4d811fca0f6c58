package helm

import (
	"fmt"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// clientsets keeps one typed clientset per user of a cluster, for every
// action to share.
//
// Helm builds a clientset per action twice over (its kube client's and its
// release storage's, from kubectl's factory): each a REST client for every
// API group of client-go, five MiB of the heap with eight actions running
// and most of what an install allocated. A clientset holds no state of an
// action and is safe for concurrent use.
type clientsets struct {
	mu   sync.Mutex
	sets map[string]*kubernetes.Clientset
}

// get returns the clientset of user (the impersonated user; "" is the
// operator itself), building it from config, the config of user, the first
// time.
func (c *clientsets) get(user string, config *rest.Config) (*kubernetes.Clientset, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs, ok := c.sets[user]; ok {
		return cs, nil
	}
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes clients: %w", err)
	}
	if c.sets == nil {
		c.sets = map[string]*kubernetes.Clientset{}
	}
	c.sets[user] = cs
	return cs, nil
}
