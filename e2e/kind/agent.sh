#!/usr/bin/env bash
# agent.sh stop|start|status CLUSTER [PROC] | restart CLUSTER PROC [ARG...]:
# the kind fleet's agent, e2e/kind/agent (Go, client-go; see its doc).
set -euo pipefail
cd "$(dirname "$0")/../.." && exec "${GO:-go}" run ./e2e/kind/agent "$@"
