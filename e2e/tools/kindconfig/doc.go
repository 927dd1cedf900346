// Package kindconfig holds a test that loads the kind cluster configs in
// kind-configs/ with kind's own loader and validation, so they cannot rot.
// It lives in the nested e2e/tools module so that the main module does not
// depend on sigs.k8s.io/kind.
package kindconfig
