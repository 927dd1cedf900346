// Package config holds the internal (hub) form of the fleetset plugins' args,
// registered in kube-scheduler's kubescheduler.config.k8s.io group the way
// sigs.k8s.io/scheduler-plugins/apis/config does.
//
// +kubebuilder:object:generate=true
package config
