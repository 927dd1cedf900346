//go:build tools

// Package tools pins the Open Cluster Management agents the local fleet runs
// (registration controller/agent, work agent, add-on manager). They are built from this
// nested module so the main module's go.mod does not carry OCM's
// dependencies: go build -o ../../bin/registration open-cluster-management.io/ocm/cmd/registration
package tools

import (
	_ "open-cluster-management.io/ocm/cmd/addon"
	_ "open-cluster-management.io/ocm/cmd/registration"
	_ "open-cluster-management.io/ocm/cmd/work"
)
