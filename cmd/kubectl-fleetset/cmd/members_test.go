package cmd

import (
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestParseMembers(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := dir + "/config"
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: east
  cluster: {server: "https://127.0.0.1:31021"}
- name: west
  cluster: {server: "https://127.0.0.1:31041"}
users:
- name: admin
  user: {token: secret}
contexts:
- name: east
  context: {cluster: east, user: admin}
- name: west
  context: {cluster: west, user: admin}
current-context: east
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name           string
		files, ctxs    []string
		wantErr        string
		wantServers    map[string]string // cluster → server; "" when the member has an error
		wantMemberErrs map[string]string
	}{
		{
			name:        "files and contexts, sorted by cluster",
			files:       []string{"west=" + kubeconfig},
			ctxs:        []string{"east=east", "south=west"},
			wantServers: map[string]string{"east": "https://127.0.0.1:31021", "south": "https://127.0.0.1:31041", "west": "https://127.0.0.1:31021"},
		},
		{
			name:           "missing kubeconfig and unknown context: reported per member, not fatal",
			files:          []string{"east=" + dir + "/missing"},
			ctxs:           []string{"west=nope"},
			wantMemberErrs: map[string]string{"east": "kubeconfig " + dir + "/missing", "west": `context "nope" does not exist`},
		},
		{name: "no =", files: []string{"east"}, wantErr: `--member "east": want CLUSTER=KUBECONFIG`},
		{name: "empty context", ctxs: []string{"east="}, wantErr: `--member-context "east=": want CLUSTER=CONTEXT`},
		{name: "a cluster twice", files: []string{"east=" + kubeconfig}, ctxs: []string{"east=east"}, wantErr: "member east is given twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			members, err := parseMembers(tc.files, tc.ctxs, kubeconfig, 3*time.Second)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var order []string
			for _, m := range members {
				order = append(order, m.cluster)
				if want, ok := tc.wantMemberErrs[m.cluster]; ok {
					if m.err == nil || !strings.Contains(m.err.Error(), want) {
						t.Errorf("member %s: error %v, want one containing %q", m.cluster, m.err, want)
					}
					continue
				}
				if m.err != nil {
					t.Fatalf("member %s: %v", m.cluster, m.err)
				}
				if m.config.Host != tc.wantServers[m.cluster] || m.config.Timeout != 3*time.Second {
					t.Errorf("member %s: server %s timeout %v, want %s 3s", m.cluster, m.config.Host, m.config.Timeout, tc.wantServers[m.cluster])
				}
			}
			if !sort.StringsAreSorted(order) || len(order) != len(tc.files)+len(tc.ctxs) {
				t.Errorf("members %v: want all %d, sorted", order, len(tc.files)+len(tc.ctxs))
			}
		})
	}
}
