package manifestwork

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Dependency kinds: the objects a pod template references by name that the
// hub delivers with the workload (spec.dependencies Auto).
const (
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
)

// DependencyRef is one ConfigMap or Secret a pod template references.
type DependencyRef struct {
	// Kind is KindConfigMap or KindSecret; Name the object's name in the
	// pod's namespace.
	Kind, Name string
	// Optional is true when every reference to it is marked optional: a
	// missing object is then skipped, as the kubelet skips it.
	Optional bool
	// Where is the first reference found, for messages, such as
	// "volume config" or "container app envFrom".
	Where string
}

// References returns the ConfigMaps and Secrets tmpl references by name:
// volumes and projected volume sources, every container's and init
// container's envFrom and env valueFrom, and imagePullSecrets, sorted by
// kind and name, one per object.
func References(tmpl *corev1.PodTemplateSpec) []DependencyRef {
	byKey := map[string]*DependencyRef{}
	var keys []string
	add := func(kind, name string, optional *bool, where string) {
		if name == "" {
			return
		}
		opt := optional != nil && *optional
		k := kind + "/" + name
		if r, ok := byKey[k]; ok {
			r.Optional = r.Optional && opt
			return
		}
		byKey[k] = &DependencyRef{Kind: kind, Name: name, Optional: opt, Where: where}
		keys = append(keys, k)
	}
	spec := &tmpl.Spec
	for _, v := range spec.Volumes {
		where := "volume " + v.Name
		if c := v.ConfigMap; c != nil {
			add(KindConfigMap, c.Name, c.Optional, where)
		}
		if s := v.Secret; s != nil {
			add(KindSecret, s.SecretName, s.Optional, where)
		}
		if p := v.Projected; p != nil {
			for _, src := range p.Sources {
				if c := src.ConfigMap; c != nil {
					add(KindConfigMap, c.Name, c.Optional, where)
				}
				if s := src.Secret; s != nil {
					add(KindSecret, s.Name, s.Optional, where)
				}
			}
		}
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, ef := range c.EnvFrom {
				where := "container " + c.Name + " envFrom"
				if r := ef.ConfigMapRef; r != nil {
					add(KindConfigMap, r.Name, r.Optional, where)
				}
				if r := ef.SecretRef; r != nil {
					add(KindSecret, r.Name, r.Optional, where)
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				where := "container " + c.Name + " env " + e.Name
				if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
					add(KindConfigMap, r.Name, r.Optional, where)
				}
				if r := e.ValueFrom.SecretKeyRef; r != nil {
					add(KindSecret, r.Name, r.Optional, where)
				}
			}
		}
	}
	for _, s := range spec.ImagePullSecrets {
		add(KindSecret, s.Name, nil, "imagePullSecrets")
	}
	slices.Sort(keys)
	out := make([]DependencyRef, len(keys))
	for i, k := range keys {
		out[i] = *byKey[k]
	}
	return out
}

// Dependency returns the copy of a hub ConfigMap or Secret (obj, a
// *corev1.ConfigMap or *corev1.Secret) that the hub delivers for fs: its
// name, namespace, data and type, with fleetset's labels (the FleetSet and
// owner UID) instead of its own metadata. It returns an error for any other
// type.
func Dependency(fs *fleetv1.FleetSet, obj runtime.Object) (runtime.Object, error) {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: fs.Namespace, Labels: ownedBy(fs, map[string]string{fleetv1.LabelSet: fs.Name})}
	}
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: KindConfigMap}, ObjectMeta: meta(o.Name),
			Data: o.Data, BinaryData: o.BinaryData, Immutable: o.Immutable}, nil
	case *corev1.Secret:
		return &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: KindSecret}, ObjectMeta: meta(o.Name),
			Data: o.Data, Type: o.Type, Immutable: o.Immutable}, nil
	}
	return nil, fmt.Errorf("dependency of type %T: only ConfigMaps and Secrets are delivered", obj)
}

// DependenciesHash returns the first 10 hex digits of the SHA-256 of the
// delivered content of deps (Dependency's results), in the order given;
// "" for none. It is part of the subset revision, so that an edit of a
// referenced ConfigMap or Secret rolls the subset.
func DependenciesHash(deps []runtime.Object) (string, error) {
	if len(deps) == 0 {
		return "", nil
	}
	h := sha256.New()
	for _, d := range deps {
		b, err := json.Marshal(d)
		if err != nil {
			return "", fmt.Errorf("hashing dependency: %w", err)
		}
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:10], nil
}

// dependencyResource returns the resource name of a dependency kind.
func dependencyResource(kind string) string {
	return strings.ToLower(kind) + "s"
}
