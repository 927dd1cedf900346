package tenancy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestCheckPodTemplate(t *testing.T) {
	plain := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db:1"}}}}
	privileged := *plain.DeepCopy()
	privileged.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	hostPath := *plain.DeepCopy()
	hostPath.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	hostNet := *plain.DeepCopy()
	hostNet.Spec.HostNetwork = true
	restricted := *plain.DeepCopy()
	restricted.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	restricted.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}

	cases := []struct {
		name  string
		level string
		tmpl  corev1.PodTemplateSpec
		want  []string // substrings of the error; nil: admitted
	}{
		{"plain under baseline", "baseline", plain, nil},
		{"privileged under baseline", "baseline", privileged, []string{"spec.template", `"baseline"`, "privileged", `container "db"`}},
		{"hostPath under baseline", "baseline", hostPath, []string{"hostPath volumes", `"root"`}},
		{"hostNetwork under baseline", "baseline", hostNet, []string{"host namespaces", "hostNetwork=true"}},
		{"privileged under privileged", "privileged", privileged, nil},
		{"plain under restricted", "restricted", plain, []string{"allowPrivilegeEscalation", "runAsNonRoot"}},
		{"hardened under restricted", "restricted", restricted, nil},
		{"unknown level", "lax", plain, []string{`"lax"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPodTemplate("spec.template", tc.level, &tc.tmpl)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("CheckPodTemplate = %v, want admitted", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckPodTemplate admitted the template, want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
