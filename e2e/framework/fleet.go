package framework

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/fleetset/fleetset/api/v1alpha1"
)

// Fleet is the hub and the members with their clients, and the provider
// that acts on their processes.
type Fleet struct {
	Config   Config
	Hub      client.WithWatch
	Members  []Member
	Spare    []Member
	Provider Provider
}

// Member is one member cluster.
type Member struct {
	Name   string
	Client client.WithWatch
}

// ClientOptions tune the clients: rate limits and a per-request timeout
// (0: none).
type ClientOptions struct {
	QPS     float32
	Burst   int
	Timeout time.Duration
}

// NewFleet builds the clients and the provider of c.
func NewFleet(c Config, o ClientOptions) (*Fleet, error) {
	f := &Fleet{Config: c}
	var err error
	if f.Hub, err = NewClient(c.HubKubeconfig, o); err != nil {
		return nil, err
	}
	for _, list := range []struct {
		from []NamedPath
		to   *[]Member
	}{{c.Members, &f.Members}, {c.Spare, &f.Spare}} {
		for _, np := range list.from {
			cl, err := NewClient(np.Path, o)
			if err != nil {
				return nil, err
			}
			*list.to = append(*list.to, Member{Name: np.Name, Client: cl})
		}
	}
	if f.Provider, err = NewProvider(c.Provider); err != nil {
		return nil, err
	}
	return f, nil
}

// Scheme holds the kinds the tests read: core, fleetset, CRDs, OCM's
// cluster and work APIs.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, fleetv1.AddToScheme,
		apiextensionsv1.AddToScheme, clusterv1beta2.Install, clusterv1beta1.Install, workv1.Install} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// RESTConfig reads a kubeconfig and applies o.
func RESTConfig(path string, o ClientOptions) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	if o.QPS > 0 {
		cfg.QPS, cfg.Burst = o.QPS, o.Burst
	}
	cfg.Timeout = o.Timeout
	return cfg, nil
}

// NewClient is a client of the cluster of a kubeconfig, with Scheme.
func NewClient(path string, o ClientOptions) (client.WithWatch, error) {
	cfg, err := RESTConfig(path, o)
	if err != nil {
		return nil, err
	}
	return client.NewWithWatch(cfg, client.Options{Scheme: Scheme()})
}

// ManagedClusterGVK is OCM's ManagedCluster, read as unstructured.
var ManagedClusterGVK = schema.GroupVersionKind{Group: "cluster.open-cluster-management.io", Version: "v1", Kind: "ManagedCluster"}

// AvailableStatus returns the status of a ManagedCluster's Available
// condition ("" when it has none).
func AvailableStatus(mc *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(mc.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "ManagedClusterConditionAvailable" {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// ManagedClusterAvailable returns the Available status of ManagedCluster
// name on the hub.
func ManagedClusterAvailable(ctx context.Context, hub client.Client, name string) (string, error) {
	mc := &unstructured.Unstructured{}
	mc.SetGroupVersionKind(ManagedClusterGVK)
	if err := hub.Get(ctx, client.ObjectKey{Name: name}, mc); err != nil {
		return "", err
	}
	return AvailableStatus(mc), nil
}

// ManagedClusters lists the hub's ManagedClusters.
func ManagedClusters(ctx context.Context, hub client.Client) ([]unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(ManagedClusterGVK.GroupVersion().WithKind("ManagedClusterList"))
	if err := hub.List(ctx, l); err != nil {
		return nil, err
	}
	return l.Items, nil
}
