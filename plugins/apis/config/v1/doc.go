// Package v1 holds the versioned (kubescheduler.config.k8s.io/v1) form of the
// fleetset plugins' args: pointer fields, defaults and conversions to the
// internal types in package config.
//
// +kubebuilder:object:generate=true
package v1
