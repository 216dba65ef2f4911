#!/usr/bin/env bash
# Scale-out test of the container appliance. It starts the shipped compose.yaml with
# `--scale executor=3` behind the relay (as an operator would: only the token file and the
# published port are chosen here), then drives many concurrent MCP clients through the relay's
# port (tests/docker/scale_out.py, the official Python SDK): every reply must carry its own
# token, every replica must serve, and one replica is killed mid-load (`docker kill`), which may
# cost only the executions in flight on it, each with a clear error at its client.
#
#   scripts/build-image && tests/docker/scale-out.sh
#
# One PASS/FAIL line per check, then the figures (replies per replica, total, errors, lost,
# p50/p99 latency, throughput); exits 1 if any check fails. DOCKER_TESTING.md explains each.
# REPLICAS, CLIENTS and EXECUTIONS change the load; PYTHON names a Python with the MCP SDK.
set -euo pipefail
cd "$(dirname "$0")/../.."

image=${CODE_EXECUTOR_IMAGE:-code-executor:latest}
replicas=${REPLICAS:-3}
clients=${CLIENTS:-36}
executions=${EXECUTIONS:-240}
project=cexecscale$$
work=$(mktemp -d)
python=${PYTHON:-$PWD/.venv/bin/python}

if docker compose version >/dev/null 2>&1; then
  compose() { docker compose -p "$project" -f compose.yaml "$@"; }
else
  compose() { docker-compose -p "$project" -f compose.yaml "$@"; }
fi
cleanup() {
  compose down -v --remove-orphans >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

docker image inspect "$image" >/dev/null 2>&1 || { echo "FAIL image: $image not built (scripts/build-image)"; exit 1; }
[ -x "$python" ] || { echo "FAIL MCP client: no Python with the MCP SDK at $python (scripts/test creates .venv)"; exit 1; }

. tests/docker/operator-choices.sh
operator_choices "$image" "$work"

echo "== starting the appliance with $replicas executors (project $project, port $port)"
started=$(date +%s)
if ! compose up -d --scale "executor=$replicas" >"$work/up.log" 2>&1; then
  cat "$work/up.log"
  echo "FAIL compose up --scale executor=$replicas: the appliance does not start"
  exit 1
fi
mapfile -t executors < <(compose ps -q executor)

# Every replica healthy (their healthchecks), within 3 minutes.
healthy=0
for _ in $(seq 1 90); do
  healthy=0
  for cid in "${executors[@]}"; do
    [ "$(docker inspect -f '{{.State.Health.Status}}' "$cid")" = healthy ] && healthy=$((healthy + 1))
  done
  [ "$healthy" -eq "$replicas" ] && break
  sleep 2
done
if [ "${#executors[@]}" -ne "$replicas" ] || [ "$healthy" -ne "$replicas" ]; then
  echo "FAIL $replicas replicas healthy: ${#executors[@]} started, $healthy healthy"
  for cid in "${executors[@]}"; do docker logs --tail 10 "$cid" 2>&1 | sed "s/^/  ${cid:0:12}: /"; done
  exit 1
fi
echo "PASS $replicas replicas healthy: ${executors[*]:0:$replicas} (in $(($(date +%s) - started)) s)" | sed -E 's/([0-9a-f]{12})[0-9a-f]{52}/\1/g'

set +e
"$python" tests/docker/scale_out.py "http://127.0.0.1:$port/mcp" "$work/http_token" "${executors[@]}" \
  --clients "$clients" --executions "$executions"
rc=$?
set -e

# The killed replica stays down (`docker kill` is a manual stop for the restart policy); the
# others were neither restarted nor killed by the OOM killer.
for cid in "${executors[@]}"; do
  state=$(docker inspect -f '{{.State.Status}} restarts={{.RestartCount}} oom={{.State.OOMKilled}}' "$cid")
  echo "  executor ${cid:0:12}: $state"
done
relay=$(compose ps -q relay)
echo "  relay: $(docker inspect -f '{{.State.Status}} restarts={{.RestartCount}}' "$relay"); $(docker stats --no-stream --format 'memory {{.MemUsage}}' "$relay")"
if [ "$rc" -ne 0 ]; then
  docker logs --tail 20 "$relay" 2>&1 | sed 's/^/  relay log: /'
  echo "scale-out: failed"
  exit 1
fi
echo "scale-out: all checks passed"
