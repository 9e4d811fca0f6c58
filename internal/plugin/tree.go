package plugin

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kraanv1 "github.com/kraan-io/kraan-operator/api/v1alpha1"
	"github.com/kraan-io/kraan-operator/internal/apply"
)

// treeNode is one line of a tree and its children.
type treeNode struct {
	label    string
	state    state
	children []*treeNode
}

func newTreeCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "tree (layer|helmrelease) NAME",
		Short: "Show a layer's HelmReleases and objects, or a release's objects, with their readiness",
		Example: `  kubectl kraan tree layer apps
  kubectl kraan tree helmrelease -n apps shop`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := o.connect()
			if err != nil {
				return err
			}
			m, err := newManaged(s)
			if err != nil {
				return err
			}
			var root *treeNode
			switch {
			case isLayerKind(args[0]):
				root, err = m.layerTree(cmd.Context(), args[1])
			case isReleaseKind(args[0]):
				root, err = m.releaseTree(cmd.Context(), client.ObjectKey{Namespace: s.namespace, Name: args[1]})
			default:
				err = fmt.Errorf("unknown kind %q: use layer or helmrelease", args[0])
			}
			if err != nil {
				return err
			}
			printTree(o.streams.Out, root, o.colored())
			return nil
		},
	}
}

func (m *managed) layerTree(ctx context.Context, name string) (*treeNode, error) {
	l := &kraanv1.AddonsLayer{}
	if err := m.s.client.Get(ctx, client.ObjectKey{Name: name}, l); err != nil {
		return nil, getError(layerKind, "", name, err)
	}
	st := layerState(l)
	root := &treeNode{label: fmt.Sprintf("AddonsLayer %s (version %s, revision %s)", l.Name, l.Spec.Version, orDash(l.Status.Revision)), state: st}
	for _, obj := range m.layerObjects(l) {
		child, err := m.objectNode(ctx, obj)
		if err != nil {
			return nil, err
		}
		root.children = append(root.children, child)
	}
	return root, nil
}

// objectNode is an object of a layer; a HelmRelease brings its own objects.
func (m *managed) objectNode(ctx context.Context, obj *unstructured.Unstructured) (*treeNode, error) {
	if obj.GroupVersionKind().Group == kraanv1.GroupVersion.Group && obj.GetKind() == releaseKind {
		return m.releaseTree(ctx, client.ObjectKeyFromObject(obj))
	}
	st, err := m.health(ctx, obj)
	if err != nil {
		return nil, err
	}
	return &treeNode{label: apply.Describe(obj), state: st}, nil
}

func (m *managed) releaseTree(ctx context.Context, key client.ObjectKey) (*treeNode, error) {
	hr := &kraanv1.HelmRelease{}
	if err := m.s.client.Get(ctx, key, hr); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, notFound("helmrelease", key.Namespace, key.Name)
		}
		return nil, getError(releaseKind, key.Namespace, key.Name, err)
	}
	p, err := m.releaseObjects(ctx, hr)
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("HelmRelease %s/%s (chart %s, Helm revision %d)", hr.Namespace, hr.Name, orDash(p.CurrentChart), p.CurrentRevision)
	node := &treeNode{label: label, state: releaseState(hr)}
	for _, obj := range p.Current {
		st, err := m.health(ctx, obj)
		if err != nil {
			return nil, err
		}
		node.children = append(node.children, &treeNode{label: apply.Describe(obj), state: st})
	}
	return node, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printTree draws the tree as flux tree does, with each node's state.
func printTree(out io.Writer, root *treeNode, color bool) {
	fmt.Fprintln(out, root.label+" "+stateText(root.state, color))
	printChildren(out, root.children, "", color)
}

func printChildren(out io.Writer, nodes []*treeNode, prefix string, color bool) {
	for i, n := range nodes {
		branch, next := "├── ", "│   "
		if i == len(nodes)-1 {
			branch, next = "└── ", "    "
		}
		fmt.Fprintln(out, prefix+branch+n.label+" "+stateText(n.state, color))
		printChildren(out, n.children, prefix+next, color)
	}
}

// stateText is "[Ready]" or "[Progressing: message]", coloured.
func stateText(s state, color bool) string {
	word := s.word
	if color && s.tone != toneNone {
		word = ansi[s.tone] + word + "\x1b[0m"
	}
	if s.message != "" && s.tone != toneGood {
		return "[" + word + ": " + strings.TrimSpace(s.message) + "]"
	}
	return "[" + word + "]"
}
