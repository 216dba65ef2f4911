#!/usr/bin/env bash
# Security test suite of the container appliance. It starts the appliance from the shipped
# compose.yaml exactly as an operator would (no hardening flag of its own; only the token file
# and the published port are chosen here), then checks each hardening claim from inside (the
# `code-executor posture` report, through `docker exec`: the image has no shell) and from
# outside (the real MCP endpoint with the official Python SDK, docker inspect).
#
#   scripts/build-image && ./test-docker-security.sh
#
# One PASS/FAIL line per check; exits 1 if any check fails. DOCKER_TESTING.md explains each.
# Uses the repository's .venv (scripts/test creates it) for the MCP client.
set -uo pipefail
cd "$(dirname "$0")"

image=${CODE_EXECUTOR_IMAGE:-code-executor:latest}
project=cexecsec$$
work=$(mktemp -d)
python=${PYTHON:-$PWD/.venv/bin/python}
failures=0

pass() { echo "PASS $1: $2"; }
fail() { echo "FAIL $1: $2"; failures=$((failures + 1)); }
result() { if [ "$1" = 0 ]; then pass "$2" "$3"; else fail "$2" "$3"; fi; }

if docker compose version >/dev/null 2>&1; then
  compose() { docker compose -p "$project" -f compose.yaml "$@"; }
else
  compose() { docker-compose -p "$project" -f compose.yaml "$@"; }
fi

cleanup() {
  compose down -v --remove-orphans >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

docker image inspect "$image" >/dev/null 2>&1 || { echo "FAIL image: $image not built (scripts/build-image)"; exit 1; }

# The operator's two choices: a token file readable by uid 1001, and where to publish.
head -c 32 /dev/urandom | base64 | tr -d '/+=\n' > "$work/http_token"
chmod 0444 "$work/http_token"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export CODE_EXECUTOR_IMAGE=$image
export CODE_EXECUTOR_TOKEN_FILE=$work/http_token
export CODE_EXECUTOR_PUBLISH=127.0.0.1:$port
url=http://127.0.0.1:$port/mcp

echo "== starting the appliance from compose.yaml (project $project, port $port)"
if ! compose up -d >"$work/up.log" 2>&1; then
  cat "$work/up.log"
  echo "FAIL compose up: the appliance does not start"
  exit 1
fi
cid=$(compose ps -q executor)

# --- healthcheck ------------------------------------------------------------------------------
status=starting
for _ in $(seq 1 90); do
  status=$(docker inspect -f '{{.State.Health.Status}}' "$cid" 2>/dev/null)
  [ "$status" = healthy ] && break
  [ "$status" = unhealthy ] && break
  sleep 2
done
[ "$status" = healthy ]
result $? "healthcheck reports healthy" "docker health status: $status"
if [ "$status" != healthy ]; then
  docker logs --tail 40 "$cid" 2>&1 | sed 's/^/  log: /'
fi

# --- the image --------------------------------------------------------------------------------
user=$(docker image inspect -f '{{.Config.User}}' "$image")
[ "$user" = 1001:1001 ]
result $? "image user" "Config.User=$user"
for sh in /bin/sh /bin/bash /bin/busybox /usr/bin/env; do
  if docker exec "$cid" "$sh" -c true >/dev/null 2>&1; then
    fail "no shell in the image" "$sh runs"
    sh=found
    break
  fi
done
[ "$sh" = found ] || pass "no shell in the image" "/bin/sh, /bin/bash, /bin/busybox, /usr/bin/env do not exist"

# --- the posture report from inside ---------------------------------------------------------
docker exec "$cid" /usr/local/bin/code-executor posture --json >"$work/posture.json" 2>"$work/posture.err"
posture_rc=$?
if ! python3 - "$work/posture.json" <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
for c in report["checks"]:
    print(("PASS" if c["pass"] else "FAIL") + " posture/" + c["name"] + ": " + " ".join(c["detail"].split())[:400])
sys.exit(1 if report["failed"] else 0)
EOF
then
  failures=$((failures + 1))
  [ -s "$work/posture.json" ] || { echo "  posture exit $posture_rc:"; sed 's/^/  /' "$work/posture.err"; }
fi

# --- first-run configuration ----------------------------------------------------------------
if docker cp "$cid:/config/config.toml" "$work/config.toml" 2>"$work/cp.err"; then
  grep -q '^ops_listen = "0.0.0.0:9464"' "$work/config.toml" \
    && grep -q '^audit_log_dir = "/audit"' "$work/config.toml" \
    && grep -q '^http_token_file = "/run/secrets/http_token"' "$work/config.toml" \
    && grep -q '^max_concurrent_executions = 2' "$work/config.toml" \
    && ! grep -qF "$(cat "$work/http_token")" "$work/config.toml"
  result $? "first start writes the settings from CODE_EXECUTOR_*" \
    "/config/config.toml: $(grep -vc '^#' "$work/config.toml") lines, ops_listen, audit_log_dir, token file, limits; no token value"
else
  fail "first start writes the settings from CODE_EXECUTOR_*" "$(cat "$work/cp.err")"
fi
before=$(sha256sum <"$work/config.toml" 2>/dev/null | cut -c1-16)
compose restart executor >/dev/null 2>&1
status=starting
for _ in $(seq 1 90); do
  status=$(docker inspect -f '{{.State.Health.Status}}' "$cid" 2>/dev/null)
  [ "$status" = healthy ] && break
  sleep 2
done
docker cp "$cid:/config/config.toml" "$work/config2.toml" 2>/dev/null
after=$(sha256sum <"$work/config2.toml" 2>/dev/null | cut -c1-16)
[ -n "$before" ] && [ "$before" = "$after" ] && [ "$status" = healthy ]
result $? "later starts reuse the settings file" "sha256 before restart $before, after $after; health $status"

# A first start (a settings path that does not exist yet, on the container's own /tmp: the
# service's config volume already holds the settings of the start above).
bad=$(compose run --rm -T -e CODE_EXECUTOR_CONFIG=/tmp/first-start/config.toml -e CODE_EXECUTOR_TIMEOUT_MS=soon executor 2>&1 </dev/null)
bad_rc=$?
[ $bad_rc -ne 0 ] && grep -q 'CODE_EXECUTOR_TIMEOUT_MS' <<<"$bad"
result $? "a bad variable stops the first start, named" "exit $bad_rc: $(grep -o 'error:.*' <<<"$bad" | head -1 | cut -c1-200)"

# --- through the real MCP endpoint ------------------------------------------------------------
mcp() { "$python" scripts/image/mcp-checks.py "$url" "$work/http_token" "$@" || failures=$((failures + 1)); }
if [ ! -x "$python" ]; then
  fail "MCP client" "no Python with the MCP SDK at $python (scripts/test creates .venv)"
else
  mcp auth hostile hostile-python alive
  started=$(docker inspect -f '{{.State.StartedAt}}' "$cid")
  mcp memory-bomb alive
  now=$(docker inspect -f '{{.State.StartedAt}} {{.State.Running}} {{.RestartCount}}' "$cid")
  [ "$now" = "$started true 0" ]
  result $? "server survives the memory bomb" "StartedAt/Running/RestartCount: $now"
  bomb=$(docker exec "$cid" /usr/local/bin/code-executor posture-probe fork-bomb 2>&1)
  result $? "fork bomb capped by the pids limit" "$bomb"
  mcp alive
  now=$(docker inspect -f '{{.State.StartedAt}} {{.State.Running}} {{.RestartCount}}' "$cid")
  [ "$now" = "$started true 0" ]
  result $? "server survives the fork bomb" "StartedAt/Running/RestartCount: $now"
fi

echo
if [ "$failures" -eq 0 ]; then
  echo "test-docker-security: all checks passed"
else
  echo "test-docker-security: $failures check group(s) failed"
  docker logs --tail 30 "$cid" 2>&1 | sed 's/^/  log: /'
  exit 1
fi
