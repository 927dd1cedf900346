//go:build tools

// Package tools records the etcd server node-image.sh builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
