package kindagent

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// selector is d's matchLabels as a label selector.
func selector(d *appsv1.Deployment) (string, error) {
	if d.Spec.Selector == nil || len(d.Spec.Selector.MatchLabels) == 0 {
		return "", fmt.Errorf("deployment %s/%s has no matchLabels selector", d.Namespace, d.Name)
	}
	return labels.SelectorFromSet(d.Spec.Selector.MatchLabels).String(), nil
}

func pods(ctx context.Context, k kubernetes.Interface, ns, sel string) ([]corev1.Pod, error) {
	l, err := k.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func podUIDs(ctx context.Context, k kubernetes.Interface, ns, sel string) (map[string]bool, error) {
	ps, err := pods(ctx, k, ns, sel)
	out := map[string]bool{}
	for _, p := range ps {
		out[string(p.UID)] = true
	}
	return out, err
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// until polls cond every a.Poll for a.Wait; the error names what and the
// last reason.
func (a *Agent) until(ctx context.Context, what string, cond func() (bool, string, error)) error {
	deadline := time.Now().Add(a.Wait)
	for {
		ok, why, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s after %v: %s", what, a.Wait, why)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (%s)", what, ctx.Err(), why)
		case <-time.After(a.Poll):
		}
	}
}

// waitGone: no pod of Deployment ns/name left.
func (a *Agent) waitGone(ctx context.Context, k kubernetes.Interface, cluster, ns, name string) error {
	d, err := k.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	sel, err := selector(d)
	if err != nil {
		return fmt.Errorf("%s: %w", cluster, err)
	}
	return a.until(ctx, fmt.Sprintf("%s: pods of %s/%s still there", cluster, ns, name), func() (bool, string, error) {
		ps, err := pods(ctx, k, ns, sel)
		if err != nil {
			return false, err.Error(), nil
		}
		var left []string
		for _, p := range ps {
			left = append(left, p.Name)
		}
		return len(left) == 0, strings.Join(left, " "), nil
	})
}

// waitReady: every replica of Deployment ns/name Ready.
func (a *Agent) waitReady(ctx context.Context, k kubernetes.Interface, cluster, ns, name string) error {
	return a.until(ctx, fmt.Sprintf("%s: %s/%s not Ready", cluster, ns, name), func() (bool, string, error) {
		d, err := k.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return d.Status.ReadyReplicas == replicas(d), fmt.Sprintf("%d of %d replicas Ready", d.Status.ReadyReplicas, replicas(d)), nil
	})
}

// waitNew: Deployment ns/name has rolled out (its generation observed,
// every replica updated) and all its pods are Ready and new: none of old
// is left, terminating or not. Another writer changing container 0 from
// want fails it at once.
func (a *Agent) waitNew(ctx context.Context, k kubernetes.Interface, cluster, ns, name, sel string, old map[string]bool, want Spec) error {
	return a.until(ctx, fmt.Sprintf("%s: %s/%s not restarted", cluster, ns, name), func() (bool, string, error) {
		d, err := k.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "cannot read the Deployment: " + err.Error(), nil
		}
		if got := specOf(d); !got.Equal(want) {
			return false, "", fmt.Errorf("%s: %s/%s was changed by another writer while restarting (now '%s', set '%s'; see its managedFields)", cluster, ns, name, got, want)
		}
		ps, err := pods(ctx, k, ns, sel)
		if err != nil {
			return false, err.Error(), nil
		}
		oldLeft, ready := 0, int32(0)
		for i := range ps {
			switch {
			case old[string(ps[i].UID)]:
				oldLeft++
			case ps[i].DeletionTimestamp == nil && podReady(&ps[i]):
				ready++
			}
		}
		n := replicas(d)
		switch {
		case d.Status.ObservedGeneration < d.Generation:
			return false, fmt.Sprintf("generation %d not observed yet (%d)", d.Generation, d.Status.ObservedGeneration), nil
		case d.Status.UpdatedReplicas != n || d.Status.Replicas != n:
			return false, fmt.Sprintf("%d of %d replicas updated, %d in all", d.Status.UpdatedReplicas, n, d.Status.Replicas), nil
		case oldLeft > 0:
			return false, fmt.Sprintf("%d old pod(s) left", oldLeft), nil
		case ready != n:
			return false, fmt.Sprintf("%d of %d new pods Ready", ready, n), nil
		}
		a.logf("%s: %s/%s: %d new pod(s) Ready, no old pod left", cluster, ns, name, n)
		return true, "", nil
	})
}

// waitTemplate: the work agent applied the add-on's rendering to
// Deployment ns/name (the image compared without its registry, which an
// AddOnDeploymentConfig may mirror).
func (a *Agent) waitTemplate(ctx context.Context, k kubernetes.Interface, cluster, ns, name string, want Spec) error {
	repo := want.Image[strings.LastIndex(want.Image, "/")+1:]
	return a.until(ctx, fmt.Sprintf("%s: %s/%s not rendered as '%s' by the add-on", cluster, ns, name, want), func() (bool, string, error) {
		d, err := k.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		got := specOf(d)
		return ArgsRendered(want.Args, got.Args) && strings.HasSuffix(got.Image, repo), "now '" + got.String() + "'", nil
	})
}

// placeholder is an add-on template variable, such as {{CLUSTER_NAME}} or
// {{HUB_KUBECONFIG}}, which OCM's add-on manager replaces per cluster when
// it renders an AddOnTemplate.
var placeholder = regexp.MustCompile(`\{\{[A-Za-z0-9_]+\}\}`)

// ArgsRendered reports whether got (a Deployment's container args as the
// work agent applied them) is want (the AddOnTemplate's args) rendered:
// the same number of args, each equal to want's outside its placeholders,
// and each placeholder standing for a non-empty string.
func ArgsRendered(want, got []string) bool {
	if len(want) != len(got) {
		return false
	}
	for i, w := range want {
		parts := placeholder.Split(w, -1)
		for j := range parts {
			parts[j] = regexp.QuoteMeta(parts[j])
		}
		if !regexp.MustCompile("^" + strings.Join(parts, ".+") + "$").MatchString(got[i]) {
			return false
		}
	}
	return true
}
