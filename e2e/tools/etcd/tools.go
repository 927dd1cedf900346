//go:build tools

// Package tools pins go.etcd.io/etcd/server/v3, the etcd server built into
// bin/etcd by the Makefile, and go.etcd.io/etcd/etcdctl/v3, the etcdctl of
// the etcd image (make kind-etcd-image), at the same release.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
