// Package bench measures fleetset-scheduler's throughput on a real
// kube-apiserver (see TestSchedulerThroughput; run with make bench-scheduler).
package bench
