package tenancy

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// Pod Security labels the hub puts on the namespaces it creates in member
// clusters (the Pod Security Admission labels, KEP-2579).
const (
	// LabelPodSecurityEnforce is the namespace label that makes the member's
	// apiserver enforce a level on every pod of the namespace.
	LabelPodSecurityEnforce = psaapi.EnforceLevelLabel
	// LabelPodSecurityEnforceVersion pins the version of the level's rules.
	LabelPodSecurityEnforceVersion = psaapi.EnforceVersionLabel
)

var (
	evaluatorOnce sync.Once
	evaluator     policy.Evaluator
	evaluatorErr  error
)

// CheckPodTemplate evaluates tmpl against Pod Security level (privileged,
// baseline or restricted) at the latest version of its rules, with the Pod
// Security Admission library's own checks, as the member's apiserver will
// when the StatefulSet controller creates the pods. It returns nil when the
// level admits the template, else an error naming the field path prefix and
// each forbidden setting with its containers, e.g. `privileged (container
// "db" must not set securityContext.privileged=true)`, or an error for an
// unknown level.
func CheckPodTemplate(field, level string, tmpl *corev1.PodTemplateSpec) error {
	lvl, err := psaapi.ParseLevel(level)
	if err != nil {
		return fmt.Errorf("pod security level %q: %w", level, err)
	}
	evaluatorOnce.Do(func() { evaluator, evaluatorErr = policy.NewEvaluator(policy.DefaultChecks()) })
	if evaluatorErr != nil {
		return fmt.Errorf("pod security checks: %w", evaluatorErr)
	}
	res := policy.AggregateCheckResults(evaluator.EvaluatePod(psaapi.LevelVersion{Level: lvl, Version: psaapi.LatestVersion()}, &tmpl.ObjectMeta, &tmpl.Spec))
	if res.Allowed {
		return nil
	}
	return fmt.Errorf("%s violates PodSecurity %q: %s", field, level, res.ForbiddenDetail())
}

// CheckScheduling returns an error naming field when tmpl sets
// spec.nodeName: a pod bound by name never reaches fleetset-scheduler, so
// it skips its placement's domain and its fencing gate. nil otherwise.
func CheckScheduling(field string, tmpl *corev1.PodTemplateSpec) error {
	if tmpl.Spec.NodeName != "" {
		return fmt.Errorf("%s: spec.nodeName %q must not be set: fleetset-scheduler places every pod (a pod bound by nodeName skips its domain and its fencing gate)", field, tmpl.Spec.NodeName)
	}
	return nil
}
