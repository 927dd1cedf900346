package cmd

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// AnnotationLastApplied is kubectl apply's copy of the object it applied:
// for a Secret, its data in clear.
const AnnotationLastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// minScrubLen is the shortest Secret value the report also scrubs out of
// every other string it copies (event and condition messages, annotations):
// shorter ones would match unrelated text. Values of any length are
// redacted where they are a Secret's data.
const minScrubLen = 6

// redactor removes Secret values from the objects a report copies, so that
// the archive can be attached to a public bug report. The report reads no
// Secret itself, but it copies objects that hold Secrets: the hub's
// ManifestWorks carry the Secrets a pod template references (spec.dependencies
// Auto), and any object applied with kubectl apply carries its own copy in
// AnnotationLastApplied. It
//
//   - replaces every value of data and stringData of every object of kind
//     Secret (apiVersion v1), at any depth (a ManifestWork's manifests, a
//     List's items), with "REDACTED: <n> bytes, hmac-sha256 <12 hex>": the
//     keys stay, and equal values in one archive have equal digests, keyed
//     by a random per-report key, so that a reader can compare them but not
//     guess a password by hashing candidates;
//   - replaces every AnnotationLastApplied with its size;
//   - replaces the status feedback a ManifestWork reports of a Secret
//     manifest (status.resourceStatus.manifests[] of kind Secret) the same way;
//   - then replaces every occurrence of a redacted value (of at least
//     minScrubLen bytes, in clear or base64) in any other string of the
//     archive (event messages, conditions) with "REDACTED".
//
// ConfigMaps, pod specs (env values written in clear in a template), and
// events are copied as they are.
type redactor struct {
	key []byte
	// values are the Secret values seen (clear and base64 forms), for the
	// scrub pass; sorted, longest first, once redact has run.
	values map[string]bool
	sorted []string
	// secrets counts the Secret objects redacted, redacted their values.
	secrets, redacted int
}

// newRedactor returns a redactor with a random key.
func newRedactor() *redactor {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on Linux (Go 1.24+ does not return errors)
	}
	return &redactor{key: key, values: map[string]bool{}}
}

// redact redacts objs in place (both passes).
func (r *redactor) redact(objs []map[string]any) {
	for _, o := range objs {
		r.walk(o)
	}
	r.sorted = make([]string, 0, len(r.values))
	for v := range r.values {
		r.sorted = append(r.sorted, v)
	}
	// Longest first: a value containing another is replaced whole.
	sort.Slice(r.sorted, func(i, j int) bool { return len(r.sorted[i]) > len(r.sorted[j]) })
	if len(r.sorted) == 0 {
		return
	}
	for _, o := range objs {
		scrub(o, r.sorted)
	}
}

// scrubString is s with every Secret value redact saw replaced.
func (r *redactor) scrubString(s string) string {
	return scrub(s, r.sorted).(string)
}

// walk redacts the Secrets in v and below, and every AnnotationLastApplied.
func (r *redactor) walk(v any) {
	switch t := v.(type) {
	case map[string]any:
		if isSecret(t) {
			r.secret(t)
		}
		if md, ok := t["metadata"].(map[string]any); ok {
			if ann, ok := md["annotations"].(map[string]any); ok {
				if s, ok := ann[AnnotationLastApplied].(string); ok {
					ann[AnnotationLastApplied] = fmt.Sprintf("REDACTED: %d bytes (kubectl apply's copy of the object)", len(s))
					r.redacted++
				}
			}
		}
		if rs, ok := t["resourceStatus"].(map[string]any); ok {
			r.secretFeedback(rs)
		}
		for _, c := range t {
			r.walk(c)
		}
	case []any:
		for _, c := range t {
			r.walk(c)
		}
	}
}

// isSecret reports whether m is a core v1 Secret.
func isSecret(m map[string]any) bool {
	kind, _ := m["kind"].(string)
	api, _ := m["apiVersion"].(string)
	return kind == "Secret" && api == "v1"
}

// secret redacts Secret m's data (base64) and stringData values.
func (r *redactor) secret(m map[string]any) {
	r.secrets++
	for _, field := range []string{"data", "stringData"} {
		d, ok := m[field].(map[string]any)
		if !ok {
			if m[field] != nil {
				m[field] = "REDACTED"
				r.redacted++
			}
			continue
		}
		for k, v := range d {
			s, _ := v.(string)
			plain := s
			if field == "data" {
				if b, err := base64.StdEncoding.DecodeString(s); err == nil {
					plain = string(b)
				}
			}
			d[k] = r.digest(plain)
			r.remember(plain)
			if plain != s {
				r.remember(s)
			}
		}
	}
}

// secretFeedback redacts the status feedback rs (a ManifestWork's
// status.resourceStatus) reports of Secret manifests.
func (r *redactor) secretFeedback(rs map[string]any) {
	ms, _ := rs["manifests"].([]any)
	for _, m := range ms {
		mm, ok := m.(map[string]any)
		if !ok {
			continue
		}
		meta, _ := mm["resourceMeta"].(map[string]any)
		if kind, _ := meta["kind"].(string); kind != "Secret" {
			continue
		}
		if group, _ := meta["group"].(string); group != "" {
			continue
		}
		if _, ok := mm["statusFeedbacks"]; ok {
			mm["statusFeedbacks"] = "REDACTED (status feedback of a Secret)"
			r.redacted++
		}
	}
}

// digest is the redacted form of value s.
func (r *redactor) digest(s string) string {
	r.redacted++
	h := hmac.New(sha256.New, r.key)
	h.Write([]byte(s))
	return fmt.Sprintf("REDACTED: %d bytes, hmac-sha256 %s", len(s), hex.EncodeToString(h.Sum(nil))[:12])
}

// remember records s for the scrub pass when it is long enough.
func (r *redactor) remember(s string) {
	if len(s) >= minScrubLen {
		r.values[s] = true
	}
}

// scrub replaces every occurrence of vals in the strings of v and below
// (map values and keys are left as keys: a Secret's keys are not secret).
func scrub(v any, vals []string) any {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			t[k] = scrub(c, vals)
		}
	case []any:
		for i, c := range t {
			t[i] = scrub(c, vals)
		}
	case string:
		for _, s := range vals {
			if strings.Contains(t, s) {
				t = strings.ReplaceAll(t, s, "REDACTED")
			}
		}
		return t
	}
	return v
}

// summary says what r redacted, for the command's output and README.txt.
func (r *redactor) summary() string {
	return fmt.Sprintf("Secret values are redacted (%d value(s), in %d Secret(s) the hub delivers and in kubectl apply annotations): "+
		"each is replaced by its size and an HMAC-SHA256 under a random key of this report, so equal values can be compared but not guessed",
		r.redacted, r.secrets)
}
