//go:build tools

// Package cmd pins the Go-module-built binaries the Makefile builds
// (kube-apiserver, kube-controller-manager) so `go mod tidy` keeps them.
package cmd

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
