// Package metawrite creates and updates Kubernetes objects and reads back
// only their metadata.
//
// An ordinary client (client-go, controller-runtime) decodes the apiserver's
// answer to every write: the whole object, which the apiserver encoded for
// it. A controller that writes many large objects and already holds what it
// wrote needs only the answer's metadata (resourceVersion, uid, generation,
// creationTimestamp). Writer asks for it the way metadata informers ask for
// lists and watches: with the Accept header
// "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", which
// every apiserver since Kubernetes 1.15 honours for creates and updates too
// (k8s.io/apiserver's transformResponseObject), custom resources included.
// The apiserver then encodes a meta.k8s.io/v1 PartialObjectMetadata of a
// few hundred bytes instead of the object. fleetset-hub writes its
// ManifestWorks (6.5 KB each at 20 subsets) and FleetSet status this way
// (docs/hub.md#delivery, docs/benchmarks.md).
package metawrite

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	sigsjson "sigs.k8s.io/json"
)

// Accept is the Accept header of Writer's requests: the answer as a
// meta.k8s.io/v1 PartialObjectMetadata, in JSON.
const Accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

// Writer creates and updates typed objects (with a metav1.ObjectMeta) of the
// types in its scheme; it refuses others, such as unstructured objects. Each
// write sends the whole object, as client.Client does, and sets only the
// object's metadata from the apiserver's answer (managedFields left out);
// everything else keeps what was sent. For an update, whose
// resourceVersion precondition guarantees the stored object was the one
// the caller read, that is the object as stored, except for fields the
// apiserver defaults or mutates on write. Errors are the apiserver's
// (apierrors.IsConflict, IsAlreadyExists, IsInvalid see them), or a
// client-side one for a type the scheme or RESTMapper does not know.
//
// A Writer is safe for concurrent use.
type Writer struct {
	config     *rest.Config
	httpClient *http.Client
	scheme     *runtime.Scheme
	codecs     serializer.CodecFactory
	params     runtime.ParameterCodec
	mapper     meta.RESTMapper

	mu      sync.Mutex
	clients map[schema.GroupVersionKind]*resource
}

// resource is the REST client and mapping of one kind.
type resource struct {
	rest       rest.Interface
	namespaced bool
	plural     string
}

// New returns a Writer that sends its requests through httpClient with
// config's settings (host, credentials, QPS and burst: each kind gets its
// own rate limiter unless config carries one, as with controller-runtime's
// client), encoding objects of scheme's types and mapping them to
// resources with mapper. It returns an error if httpClient is nil.
func New(config *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, mapper meta.RESTMapper) (*Writer, error) {
	if httpClient == nil {
		return nil, fmt.Errorf("metawrite: httpClient must not be nil")
	}
	return &Writer{
		config: config, httpClient: httpClient, scheme: scheme, mapper: mapper,
		codecs:  serializer.NewCodecFactory(scheme),
		params:  runtime.NewParameterCodec(scheme),
		clients: map[schema.GroupVersionKind]*resource{},
	}, nil
}

// Create creates obj (as client.Client's Create does, options included) and
// sets its metadata from the apiserver's answer.
func (w *Writer) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	o := (&client.CreateOptions{}).ApplyOptions(opts)
	return w.write(ctx, obj, func(c rest.Interface, plural string) *rest.Request {
		return c.Post().Resource(plural).VersionedParams(o.AsCreateOptions(), w.params)
	})
}

// Update replaces obj (as client.Client's Update does: its
// resourceVersion, if set, is a precondition) and sets its metadata from the
// apiserver's answer.
func (w *Writer) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	o := (&client.UpdateOptions{}).ApplyOptions(opts)
	return w.update(ctx, obj, "", o.AsUpdateOptions())
}

// UpdateStatus replaces obj's status subresource (as client.Client's
// Status().Update does) and sets its metadata from the apiserver's answer.
// A SubResourceBody option is refused: the body is obj.
func (w *Writer) UpdateStatus(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	o := (&client.SubResourceUpdateOptions{}).ApplyOptions(opts)
	if o.SubResourceBody != nil {
		return fmt.Errorf("metawrite: UpdateStatus takes no SubResourceBody")
	}
	return w.update(ctx, obj, "status", o.AsUpdateOptions())
}

func (w *Writer) update(ctx context.Context, obj client.Object, subresource string, opts *metav1.UpdateOptions) error {
	return w.write(ctx, obj, func(c rest.Interface, plural string) *rest.Request {
		req := c.Put().Resource(plural).Name(obj.GetName()).VersionedParams(opts, w.params)
		if subresource != "" {
			req = req.SubResource(subresource)
		}
		return req
	})
}

// write sends the request build returns for obj's resource (its REST
// client and plural name), in obj's namespace if the resource has one, and
// sets obj's metadata from the answer.
func (w *Writer) write(ctx context.Context, obj client.Object, build func(c rest.Interface, plural string) *rest.Request) error {
	m, err := objectMeta(obj)
	if err != nil {
		return err
	}
	r, err := w.resourceFor(obj)
	if err != nil {
		return err
	}
	req := build(r.rest, r.plural)
	if r.namespaced {
		req = req.Namespace(obj.GetNamespace())
	}
	return w.do(ctx, req, obj, m)
}

// do sends req with obj as its body and sets obj's metadata from the answer.
// An answer that is not a PartialObjectMetadata (a proxy that drops the
// Accept parameters) still carries the object's metadata, which is all do
// reads; only an answer without a resourceVersion is an error.
func (w *Writer) do(ctx context.Context, req *rest.Request, obj client.Object, dst *metav1.ObjectMeta) error {
	raw, err := req.SetHeader("Accept", Accept).Body(obj).Do(ctx).Raw()
	if err != nil {
		return err
	}
	var answer metav1.PartialObjectMetadata
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &answer); err != nil {
		return fmt.Errorf("decoding the answer to writing %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	if answer.ResourceVersion == "" {
		return fmt.Errorf("writing %s/%s: the apiserver's answer (a %s) has no resourceVersion", obj.GetNamespace(), obj.GetName(), answer.GroupVersionKind())
	}
	answer.ManagedFields = nil
	*dst = answer.ObjectMeta
	return nil
}

// objectMeta returns obj's ObjectMeta, which do overwrites with the answer's;
// it refuses objects without one (unstructured objects).
func objectMeta(obj client.Object) (*metav1.ObjectMeta, error) {
	if om, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if m, ok := om.GetObjectMeta().(*metav1.ObjectMeta); ok {
			return m, nil
		}
	}
	return nil, fmt.Errorf("metawrite: %T has no metav1.ObjectMeta; only typed objects are supported", obj)
}

// resourceFor returns the REST client and mapping of obj's kind, built on
// first use.
func (w *Writer) resourceFor(obj client.Object) (*resource, error) {
	gvk, err := apiutil.GVKForObject(obj, w.scheme)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if r, ok := w.clients[gvk]; ok {
		return r, nil
	}
	mapping, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	rc, err := apiutil.RESTClientForGVK(gvk, false, false, w.config, w.codecs, w.httpClient)
	if err != nil {
		return nil, err
	}
	r := &resource{rest: rc, namespaced: mapping.Scope.Name() == meta.RESTScopeNameNamespace, plural: mapping.Resource.Resource}
	w.clients[gvk] = r
	return r, nil
}
