// Package bench measures fleetset-scheduler with kube-scheduler's own
// benchmark harness (k8s.io/kubernetes/test/integration/scheduler_perf):
// the workloads of performance-config.yaml, run by BenchmarkPerfScheduling
// (build tag integration; make bench-scheduler).
package bench
