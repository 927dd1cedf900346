// Package scheme registers the fleetset plugins' args (internal and v1) in
// kube-scheduler's configuration scheme. Import it for its side effect before
// the scheduler reads its KubeSchedulerConfiguration.
package scheme

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"github.com/fleetset/fleetset/plugins/apis/config"
	v1 "github.com/fleetset/fleetset/plugins/apis/config/v1"
)

func init() {
	utilruntime.Must(config.AddToScheme(kubeschedulerscheme.Scheme))
	utilruntime.Must(v1.AddToScheme(kubeschedulerscheme.Scheme))
}
