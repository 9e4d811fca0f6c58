package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	habitatv1 "github.com/kraan-io/kraan-operator/api/habitat/v1alpha1"
	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	habitatctrl "github.com/kraan-io/kraan-operator/internal/controller/habitat"
)

// habitatSettle bounds how long a Habitat's peer list may lag behind its
// pods once the table showed it done: the Go controller writes the list
// after the pods' events, a few hundred milliseconds at most.
const habitatSettle = 30 * time.Second

// checkHabitats verifies what the apps layer's Habitat promises: its release
// is deployed, the supervisors of its StatefulSet run (on kwok's node) and
// the operator's peer list holds exactly their IPs.
func (d *demo) checkHabitats(ctx context.Context) error {
	var list habitatv1.HabitatList
	if err := d.env.Client.List(ctx, &list); err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return errors.New("no Habitat was deployed: the apps layer of examples/layers holds one")
	}
	for i := range list.Items {
		key := client.ObjectKeyFromObject(&list.Items[i])
		var line string
		var last error
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, habitatSettle, true, func(ctx context.Context) (bool, error) {
			line, last = d.habitatRunning(ctx, key)
			return last == nil, nil
		})
		if err != nil {
			return fmt.Errorf("the Habitat %s: %w", key, errors.Join(last, err))
		}
		fmt.Fprintln(d.out, line)
	}
	return nil
}

// habitatRunning describes a Habitat whose supervisors all run, or says
// what is missing.
func (d *demo) habitatRunning(ctx context.Context, key client.ObjectKey) (string, error) {
	h := &habitatv1.Habitat{}
	if err := d.env.Client.Get(ctx, key, h); err != nil {
		return "", err
	}
	if c := apimeta.FindStatusCondition(h.Status.Conditions, kraanv1.ReadyCondition); c == nil ||
		c.Status != metav1.ConditionTrue || c.ObservedGeneration != h.Generation {
		return "", errors.New("it is not Ready for its current generation")
	}
	sts := &appsv1.StatefulSet{}
	if err := d.env.Client.Get(ctx, key, sts); err != nil {
		return "", fmt.Errorf("its StatefulSet: %w", err)
	}
	if sts.Status.ReadyReplicas != h.Spec.Count {
		return "", fmt.Errorf("its StatefulSet has %d of %d supervisors ready", sts.Status.ReadyReplicas, h.Spec.Count)
	}
	ips, nodes, err := d.runningPods(ctx, h)
	if err != nil {
		return "", err
	}
	peers := slices.Sorted(slices.Values(h.Status.Peers))
	if len(ips) != int(h.Spec.Count) || !slices.Equal(peers, ips) {
		return "", fmt.Errorf("its peer list is %v, its Running pods' IPs %v", peers, ips)
	}
	return fmt.Sprintf("Habitat %s is Ready: StatefulSet %d/%d, supervisors Running on %s, peer list %s.",
		key, sts.Status.ReadyReplicas, h.Spec.Count, strings.Join(nodes, ", "), strings.Join(peers, ", ")), nil
}

// runningPods returns the sorted IPs of a Habitat's Running pods and the
// nodes they run on.
func (d *demo) runningPods(ctx context.Context, h *habitatv1.Habitat) (ips, nodes []string, err error) {
	var pods corev1.PodList
	if err := d.env.Client.List(ctx, &pods, client.InNamespace(h.Namespace),
		client.MatchingLabels{habitatctrl.HabitatLabel: h.Name}); err != nil {
		return nil, nil, err
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		ips = append(ips, p.Status.PodIP)
		if !slices.Contains(nodes, p.Spec.NodeName) {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	slices.Sort(ips)
	slices.Sort(nodes)
	return ips, nodes, nil
}
