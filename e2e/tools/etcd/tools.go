//go:build tools

// Package tools pins go.etcd.io/etcd/server/v3, the etcd server built into
// bin/etcd by the Makefile.
package tools

import _ "go.etcd.io/etcd/server/v3"
