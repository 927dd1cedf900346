//go:build tools

// Package tools records the CoreDNS command node-image.sh builds.
package tools

import _ "github.com/coredns/coredns"
