#!/usr/bin/env bash
# Security test suite of the container appliance. It starts the appliance from the shipped
# compose.yaml exactly as an operator would (no hardening flag of its own; only the token file
# and the published port are chosen here), then checks each hardening claim from inside (the
# `code-executor posture` report, through `docker exec`: the image has no shell) and from
# outside (the real MCP endpoint with the official Python SDK, docker inspect). A hostile
# downstream MCP server (tests/docker/) runs beside it on the `inner` network, added by the
# override tests/docker/compose.hostile.yaml and named to the appliance through
# CODE_EXECUTOR_SERVERS, as an operator would; so does the real third-party server mcp-server-time,
# a sidecar of the shipped compose profile `sidecars` (image from scripts/build-sidecar-image).
#
#   scripts/build-image && ./test-docker-security.sh
#
# One PASS/FAIL line per check; exits 1 if any check fails. DOCKER_TESTING.md explains each.
# Uses the repository's .venv (scripts/test creates it; PYTHON= names another) for the MCP client
# and for the hostile server's image (tests/docker/build-hostile-image, built without a registry).
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

files=(-f compose.yaml)
if docker compose version >/dev/null 2>&1; then
  compose() { docker compose -p "$project" "${files[@]}" "$@"; }
else
  compose() { docker-compose -p "$project" "${files[@]}" "$@"; }
fi

cleanup() {
  compose down -v --remove-orphans >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

docker image inspect "$image" >/dev/null 2>&1 || { echo "FAIL image: $image not built (scripts/build-image)"; exit 1; }

# The hostile downstream server's image (cached by content), and the override adding it.
if hostile_image=$(tests/docker/build-hostile-image "$python" 2>"$work/hostile-build.log"); then
  export CODE_EXECUTOR_HOSTILE_IMAGE=$hostile_image
  export CODE_EXECUTOR_SERVERS='{"hostile": {"type": "http", "url": "http://hostile:8000/mcp"}}'
  files+=(-f tests/docker/compose.hostile.yaml)
  # egress: the hostile server and the time sidecar are on `inner`, reached directly, not through
  # the egress proxy.
  export CODE_EXECUTOR_NO_PROXY=localhost,127.0.0.1,executor,relay,time,hostile
else
  fail "hostile downstream image" "$(tail -3 "$work/hostile-build.log")"
fi

# --- sidecar: a real third-party stdio server in its own container ---------------------------
# mcp-server-time behind mcp-proxy (scripts/build-sidecar-image, FROM scratch, cached by content),
# started by the shipped compose profile `sidecars` and named in CODE_EXECUTOR_SERVERS.
if sidecar_image=$(scripts/build-sidecar-image 2>"$work/sidecar-build.log"); then
  export CODE_EXECUTOR_SIDECAR_TIME_IMAGE=$sidecar_image
  export COMPOSE_PROFILES=sidecars
  CODE_EXECUTOR_SERVERS=$(python3 -c 'import json, os
servers = json.loads(os.environ.get("CODE_EXECUTOR_SERVERS") or "{}")
servers["time"] = {"type": "http", "url": "http://time:8000/mcp"}
print(json.dumps(servers))')
  export CODE_EXECUTOR_SERVERS
  grep '^sidecar time:' "$work/sidecar-build.log"
else
  fail "sidecar image" "$(tail -3 "$work/sidecar-build.log")"
fi
# --- end sidecar ---

# The operator's two choices: a token file readable by uid 1001, and where to publish.
. tests/docker/operator-choices.sh
operator_choices "$image" "$work"
url=http://127.0.0.1:$port/mcp

echo "== starting the appliance from ${files[*]} (project $project, port $port)"
if ! compose up -d >"$work/up.log" 2>&1; then
  cat "$work/up.log"
  echo "FAIL compose up: the appliance does not start"
  exit 1
fi
cid=$(compose ps -q executor)

# Waits (up to 3 minutes) until the executor's healthcheck says healthy or unhealthy.
wait_healthy() {
  status=starting
  for _ in $(seq 1 90); do
    status=$(docker inspect -f '{{.State.Health.Status}}' "$cid" 2>/dev/null)
    [ "$status" = healthy ] && break
    [ "$status" = unhealthy ] && break
    sleep 2
  done
}

# --- healthcheck ------------------------------------------------------------------------------
wait_healthy
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

# --- repro: the image's SBOM and its normalized build --------------------------------------
# Every ELF file of the running image (the exported filesystem of the executor) is listed in the
# SBOM the image carries, with its SHA-256; and the image is the normalized one scripts/build-image
# loads (one fixed time everywhere, no builder container or parent image recorded).
sbom_path=/usr/share/doc/code-executor/sbom.json
sbom_out=$(docker export "$cid" | python3 scripts/image/sbom check "$sbom_path" 2>&1)
result $? "SBOM lists every ELF file" "$sbom_path: $(echo "$sbom_out" | tail -5 | tr '\n' ' ')"
normalized=$(docker image inspect -f '{{.Created}} {{.Container}} {{.Config.Image}} {{.Config.Hostname}}' "$image")
history_times=$(docker image history --no-trunc --format '{{.CreatedAt}}' "$image" | sort -u | wc -l)
[ "$(echo "$normalized" | awk '{print NF}')" = 1 ] && [ "$history_times" = 1 ]
result $? "image normalized (reproducible)" "Created/Container/Config.Image/Config.Hostname: '$normalized'; distinct history times: $history_times"
# --- end repro

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
wait_healthy
docker cp "$cid:/config/config.toml" "$work/config2.toml" 2>/dev/null
after=$(sha256sum <"$work/config2.toml" 2>/dev/null | cut -c1-16)
[ -n "$before" ] && [ "$before" = "$after" ] && [ "$status" = healthy ]
result $? "later starts reuse the settings file" "sha256 before restart $before, after $after; health $status"

# `auth` runs in the image (no shell there) and keeps tokens on the config volume.
authst=$(compose run --rm -T executor auth status --json 2>&1 </dev/null)
auth_rc=$?
# (Outputs are captured before grep -q reads them: with pipefail, a writer cut off by grep's early
# exit would fail the pipeline now and then.)
env_lines=$(docker inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$cid")
[ $auth_rc -eq 0 ] && grep -q '^\[' <<<"$authst" \
  && grep -qx 'CODE_EXECUTOR_OAUTH_DIR=/config/oauth' <<<"$env_lines"
result $? "auth status runs in the appliance, tokens on the config volume" "exit $auth_rc: $(tr -d '\n' <<<"$authst" | cut -c1-120); CODE_EXECUTOR_OAUTH_DIR=/config/oauth"

# A changed CODE_EXECUTOR_SERVERS is followed on the next start, the config volume kept; changed
# back, it is followed again (the servers file was written from the variable, not edited).
if [ -n "${CODE_EXECUTOR_SERVERS:-}" ]; then
  saved_servers=$CODE_EXECUTOR_SERVERS
  export CODE_EXECUTOR_SERVERS='{"hostile": {"type": "http", "url": "http://hostile:8000/mcp"}, "hostile-again": {"type": "http", "url": "http://hostile:8000/mcp?again"}}'
  compose up -d executor >"$work/up-servers.log" 2>&1
  cid=$(compose ps -q executor)
  wait_healthy
  docker cp "$cid:/config/servers.json" "$work/servers-changed.json" 2>/dev/null
  changed_log=$(docker logs "$cid" 2>&1 | grep -c 'CODE_EXECUTOR_SERVERS changed')
  export CODE_EXECUTOR_SERVERS=$saved_servers
  compose up -d executor >>"$work/up-servers.log" 2>&1
  cid=$(compose ps -q executor)
  wait_healthy
  docker cp "$cid:/config/servers.json" "$work/servers-back.json" 2>/dev/null
  grep -q '"hostile-again"' "$work/servers-changed.json" && [ "$changed_log" -ge 1 ] \
    && ! grep -q '"hostile-again"' "$work/servers-back.json" && grep -q '"hostile"' "$work/servers-back.json" \
    && [ "$status" = healthy ]
  result $? "a changed CODE_EXECUTOR_SERVERS is followed on the next start" \
    "servers.json after the change: $(tr -d ' \n' <"$work/servers-changed.json" | cut -c1-140); logged $changed_log; changed back: $(tr -d ' \n' <"$work/servers-back.json" | cut -c1-80); health $status"
fi

# A first start (a settings path that does not exist yet, on the container's own /tmp: the
# service's config volume already holds the settings of the start above).
bad=$(compose run --rm -T -e CODE_EXECUTOR_CONFIG=/tmp/first-start/config.toml -e CODE_EXECUTOR_TIMEOUT_MS=soon executor 2>&1 </dev/null)
bad_rc=$?
[ $bad_rc -ne 0 ] && grep -q 'CODE_EXECUTOR_TIMEOUT_MS' <<<"$bad"
result $? "a bad variable stops the first start, named" "exit $bad_rc: $(grep -o 'error:.*' <<<"$bad" | head -1 | cut -c1-200)"

# --- limits: the workers' memory fits the container's -----------------------------------------
# The shipped limit holds every worker as configured (logged at start); a smaller one makes the
# server shrink each worker to fit, loudly; one too small for even the smallest workers stops
# the start with an error naming the settings. (One-off containers of the same service, with
# CODE_EXECUTOR_MEM_LIMIT as an operator would set it.)
fit_log=$(docker logs "$cid" 2>&1 | grep -o 'memory: limit [0-9]* MiB holds .*' | head -1)
[[ "$fit_log" == *"holds 2 x 1536 MiB workers"* ]]
result $? "the shipped memory limit holds the configured workers" "${fit_log:-no fit line in the log}"
shrink_name=${project}_limits_shrink
CODE_EXECUTOR_MEM_LIMIT=3g compose run -d --name "$shrink_name" executor >/dev/null 2>"$work/shrink.log"
shrunk=""
for _ in $(seq 1 30); do
  shrunk=$(docker logs "$shrink_name" 2>&1 | grep -o 'each worker is limited to [0-9]* MiB' | head -1)
  [ -n "$shrunk" ] && break
  sleep 1
done
shrink_limit=$(docker inspect -f '{{.HostConfig.Memory}}' "$shrink_name" 2>/dev/null)
docker rm -f "$shrink_name" >/dev/null 2>&1
[ "$shrunk" = "each worker is limited to 1136 MiB" ] && [ "$shrink_limit" = $((3 * 1024 * 1048576)) ]
result $? "a smaller memory limit shrinks the workers to fit" "limit ${shrink_limit:-?} bytes: ${shrunk:-no shrink line in the log $(tail -2 "$work/shrink.log")} (expected 1136 = (3072 - 800) / 2)"
too_small=$(CODE_EXECUTOR_MEM_LIMIT=1g compose run --rm -T executor 2>&1 </dev/null)
too_small_rc=$?
[ $too_small_rc -ne 0 ] && grep -q 'max_concurrent_executions' <<<"$too_small" && grep -q 'cannot hold' <<<"$too_small"
result $? "a memory limit too small for the workers stops the start, naming the settings" "exit $too_small_rc: $(grep -o 'error:.*' <<<"$too_small" | head -1 | cut -c1-260)"
# --- end limits

# --- through the real MCP endpoint ------------------------------------------------------------
mcp() { "$python" scripts/image/mcp-checks.py "$url" "$work/http_token" "$@" || failures=$((failures + 1)); }
if [ ! -x "$python" ]; then
  fail "MCP client" "no Python with the MCP SDK at $python (scripts/test creates .venv)"
else
  mcp auth hostile hostile-python alive
  started=$(docker inspect -f '{{.State.StartedAt}}' "$cid")
  # --- limits: the memory bomb meets the worker's own limit, not the container's OOM killer
  # (mcp-checks.py requires "out of memory" and no signal in the execution's error; here: no
  # `oom` event of the container while it ran).
  bomb_mark=$(date +%s)
  mcp memory-bomb alive
  bomb_ooms=$(docker events --since "$bomb_mark" --until "$(date +%s)" --filter "container=$cid" --filter event=oom --format x | wc -l)
  now=$(docker inspect -f '{{.State.StartedAt}} {{.State.Running}} {{.RestartCount}}' "$cid")
  [ "$now" = "$started true 0" ] && [ "$bomb_ooms" = 0 ]
  result $? "server survives the memory bomb, no OOM kill" "StartedAt/Running/RestartCount: $now; OOM kills during the bomb: $bomb_ooms; limit $(docker inspect -f '{{.HostConfig.Memory}}' "$cid" | awk '{print $1 / 1048576}') MiB"
  # --- end limits
  bomb=$(docker exec "$cid" /usr/local/bin/code-executor posture-probe fork-bomb 2>&1)
  result $? "fork bomb capped by the pids limit" "$bomb"
  mcp alive
  now=$(docker inspect -f '{{.State.StartedAt}} {{.State.Running}} {{.RestartCount}}' "$cid")
  [ "$now" = "$started true 0" ]
  result $? "server survives the fork bomb" "StartedAt/Running/RestartCount: $now"

  # --- crossings found by hostile testing ----------------------------------------------------
  # After each group: the executor container was not restarted, nothing in it was killed by the
  # OOM killer (Docker reports every OOM kill in the container's cgroup as an `oom` event; with
  # memswap_limit = mem_limit the killer fires at the compose limit, so none means memory stayed
  # below it), and its memory now (and its peak during the group, where this host's cgroup v1
  # lets the suite reset it); then the server must answer. A restart is waited out first, so the
  # next group starts afresh.
  memcg=/sys/fs/cgroup/memory/docker/$(docker inspect -f '{{.Id}}' "$cid")
  start_group() {
    mark=$(date +%s)
    { [ -w "$memcg/memory.max_usage_in_bytes" ] && echo 0 >"$memcg/memory.max_usage_in_bytes"; } 2>/dev/null
  }
  restarts=0
  survives() {
    local now oom mem peak=""
    now=$(docker inspect -f '{{.State.StartedAt}} {{.State.Running}} {{.RestartCount}}' "$cid")
    oom=$(docker events --since "$mark" --until "$(date +%s)" --filter "container=$cid" --filter event=oom --format x | wc -l)
    mem=$(docker stats --no-stream --format '{{.MemUsage}}' "$cid")
    [ -r "$memcg/memory.max_usage_in_bytes" ] && peak="; peak $(($(cat "$memcg/memory.max_usage_in_bytes") / 1048576)) MiB"
    [ "$now" = "$started true $restarts" ] && [ "$oom" = 0 ]
    result $? "server survives $1" "StartedAt/Running/RestartCount: $now; OOM kills: $oom; memory now $mem$peak"
    if [ "$now" != "$started true $restarts" ]; then
      wait_healthy
      read -r started restarts < <(docker inspect -f '{{.State.StartedAt}} {{.RestartCount}}' "$cid")
    fi
    mcp alive
    start_group
  }
  # What the executor's /tmp (a 256 MiB tmpfs) holds, in MiB, measured from the host through
  # /proc/PID/root (there is no shell in the image); empty where this host does not allow it.
  tmp_used() {
    local pid blocks free size
    pid=$(docker inspect -f '{{.State.Pid}}' "$cid")
    read -r blocks free size < <(stat -f -c '%b %f %S' "/proc/$pid/root/tmp" 2>/dev/null) || return 0
    echo $(( (blocks - free) * size / 1048576 ))
  }
  start_group
  mcp landlock host-origin module-loader webgpu
  survives "the module loader, node:* and WebGPU"
  tmp_before=$(tmp_used)
  mcp disk-limit
  tmp_after=$(tmp_used)
  if [ -n "$tmp_after" ]; then
    [ "$tmp_after" -lt 64 ]
    result $? "/tmp not filled by the imports" "the executor's /tmp (256 MiB tmpfs) holds $tmp_before MiB before, $tmp_after MiB after"
  fi
  survives "the disk-filling imports"
  if [ -n "${CODE_EXECUTOR_HOSTILE_IMAGE:-}" ]; then
    mcp downstream-schema
    survives "the recursive schema"
    mcp downstream-answers
    survives "the huge, deep and large answers"
    mcp downstream-slow
    survives "the slow tool"
  fi
  # --- sidecar: the real time server called from code (and not reachable by the code itself) ---
  if [ -n "${CODE_EXECUTOR_SIDECAR_TIME_IMAGE:-}" ]; then
    mcp sidecar-time
    survives "the calls to the sidecar"
  fi
  # --- end sidecar ---
  relay=$(compose ps -q relay)
  relay_before=$(docker inspect -f '{{.State.StartedAt}} {{.RestartCount}}' "$relay")
  mcp slow-clients
  survives "the slow clients"
  relay_now=$(docker inspect -f '{{.State.StartedAt}} {{.RestartCount}}' "$relay")
  [ "$relay_now" = "$relay_before" ]
  result $? "relay survives the slow clients" "StartedAt/RestartCount before: $relay_before, after: $relay_now"
fi

# --- sidecar: the time sidecar's hardening, seen from outside ---------------------------------
if [ -n "${CODE_EXECUTOR_SIDECAR_TIME_IMAGE:-}" ]; then
  tid=$(compose ps -q time)
  read -r t_user t_ro t_caps t_nnp t_mem t_pids t_ports t_nets < <(docker inspect -f \
    '{{.Config.User}} {{.HostConfig.ReadonlyRootfs}} {{json .HostConfig.CapDrop}} {{json .HostConfig.SecurityOpt}} {{.HostConfig.Memory}} {{.HostConfig.PidsLimit}} {{json .NetworkSettings.Ports}} {{range $n, $_ := .NetworkSettings.Networks}}{{$n}},{{end}}' "$tid")
  t_procs=$(docker top "$tid" -eo pid,uid | awk 'NR > 1 {print $2}' | sort | uniq -c | tr -s ' \n' ' ')
  # Captured first: `docker top | grep -q` fails now and then under pipefail (SIGPIPE).
  t_args=$(docker top "$tid" -eo pid,args)
  [ "$t_user" = 10001:10001 ] && [ "$t_ro" = true ] && [ "$t_caps" = '["ALL"]' ] \
    && [ "$t_nnp" = '["no-new-privileges:true"]' ] && [ "$t_mem" -gt 0 ] && [ "$t_pids" -gt 0 ] \
    && ! grep -q HostPort <<<"$t_ports" && [ "$t_nets" = "${project}_inner," ] \
    && grep -Eq '^ *[0-9]+ +/usr/local/bin/python3 -m mcp_server_time' <<<"$t_args" \
    && [[ $t_procs =~ ^\ ?[0-9]+\ 10001\ ?$ ]]
  result $? "time sidecar hardened" "user $t_user, read-only $t_ro, cap_drop $t_caps, $t_nnp, memory $((t_mem / 1048576)) MiB, pids $t_pids, ports $t_ports, networks ${t_nets%,}; processes (count uid): $t_procs"
  docker exec "$tid" /usr/local/bin/python3 -c 'import socket; socket.create_connection(("1.1.1.1", 443), 3)' >"$work/sidecar-out.log" 2>&1
  out_rc=$?
  [ $out_rc -ne 0 ] && grep -Eq 'unreachable|timed out|Errno' "$work/sidecar-out.log"
  result $? "time sidecar has no route out" "connect to 1.1.1.1:443 from the sidecar: exit $out_rc, $(tail -1 "$work/sidecar-out.log" | cut -c1-120)"
fi
# --- end sidecar ---
# --- egress: remote servers only through the egress proxy -----------------------------------
# The `egress` profile of compose.yaml with the proxy image (scripts/build-proxy-image) and
# tests/docker/compose.egress.yaml: two "remote" MCP servers (the hostile server's image) on the
# network `outside`, to which only the proxy is attached, and an allow-list naming one of them.
# The executor is restarted with both as downstream servers, the operator's way.
if [ -x "$python" ] && [ -n "${CODE_EXECUTOR_HOSTILE_IMAGE:-}" ]; then
  egress_image=${CODE_EXECUTOR_EGRESS_IMAGE:-code-executor-egress:latest}
  egress_built=""
  if ! docker image inspect "$egress_image" >/dev/null 2>&1; then
    egress_start=$(date +%s)
    scripts/build-proxy-image "$egress_image" >"$work/egress-build.log" 2>&1
    egress_built=" (built in $(($(date +%s) - egress_start)) s)"
  fi
  if docker image inspect "$egress_image" >/dev/null 2>&1; then
    export CODE_EXECUTOR_EGRESS_IMAGE=$egress_image COMPOSE_PROFILES=${COMPOSE_PROFILES:+$COMPOSE_PROFILES,}egress
    printf '# allow-list of the container suite: one host a line\nmcp.allowed.example\n' >"$work/egress-allow.txt"
    export CODE_EXECUTOR_EGRESS_ALLOW_FILE=$work/egress-allow.txt
    files+=(-f tests/docker/compose.egress.yaml)
    saved_servers=$CODE_EXECUTOR_SERVERS
    export CODE_EXECUTOR_SERVERS='{"hostile": {"type": "http", "url": "http://hostile:8000/mcp"}, "allowed": {"type": "http", "url": "http://mcp.allowed.example:8000/mcp"}, "denied": {"type": "http", "url": "http://mcp.denied.example:8000/mcp"}}'
    compose up -d >"$work/up-egress.log" 2>&1 || sed 's/^/  up: /' "$work/up-egress.log"
    cid=$(compose ps -q executor)
    egress=$(compose ps -q egress)
    wait_healthy

    # The proxy container, hardened like the others.
    read -r e_user e_ro e_caps e_sec e_mem e_pids < <(docker inspect -f '{{.Config.User}} {{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}} {{.HostConfig.SecurityOpt}} {{.HostConfig.Memory}} {{.HostConfig.PidsLimit}}' "$egress" | tr -d '[]')
    e_shell=$(docker exec "$egress" /bin/sh -c true 2>&1 | grep -o 'no such file or directory' | head -1)
    e_size=$(docker image inspect -f '{{.Size}}' "$egress_image")
    [ "$e_user" = 10080:10080 ] && [ "$e_ro" = true ] && [ "$e_caps" = ALL ] && [ "$e_sec" = no-new-privileges:true ] \
      && [ -n "$e_shell" ] && [ "$e_mem" -gt 0 ] && [ "$e_pids" -gt 0 ]
    result $? "egress proxy hardened" "image $egress_image, $((e_size / 1024)) KiB$egress_built; user $e_user, read-only $e_ro, cap_drop $e_caps, $e_sec, memory $((e_mem / 1048576)) MiB, pids $e_pids, /bin/sh: ${e_shell:-exists}"

    # The executor is on `inner` only; only the proxy joins `outside`, where the remote servers are.
    e_nets=$(docker inspect -f '{{range $n, $_ := .NetworkSettings.Networks}}{{$n}} {{end}}' "$cid")
    p_nets=$(docker inspect -f '{{range $n, $_ := .NetworkSettings.Networks}}{{$n}} {{end}}' "$egress")
    [ "$e_nets" = "${project}_inner " ] && grep -q "${project}_outside" <<<"$p_nets" && grep -q "${project}_egress" <<<"$p_nets"
    result $? "executor on inner only, the proxy the only way out" "executor: $e_nets; egress: $p_nets"

    mcp egress-allowed egress-denied egress-sandbox
    docker logs "$egress" >"$work/egress.log" 2>&1
    via=$(grep -c 'Request (file descriptor [0-9]*): POST http://mcp.allowed.example:8000/mcp' "$work/egress.log")
    refused=$(grep -c 'refused on filtered domain "mcp.denied.example"' "$work/egress.log")
    direct=$(grep -c 'http://hostile:' "$work/egress.log")
    [ "$via" -ge 1 ] && [ "$refused" -ge 1 ] && [ "$direct" = 0 ]
    result $? "the proxy's log: the allowed server through it, the other refused, inner sidecars not" \
      "requests to mcp.allowed.example: $via; refused mcp.denied.example: $refused; requests for hostile (in NO_PROXY): $direct; $(grep -m1 'refused on filtered' "$work/egress.log" | cut -c1-140)"

    # An allow-list that is not there stops the proxy from being created, loudly.
    missing=$(CODE_EXECUTOR_EGRESS_ALLOW_FILE=$work/no-such-allow-list compose run --rm --no-deps egress 2>&1 </dev/null)
    missing_rc=$?
    [ $missing_rc -ne 0 ] && grep -q 'no-such-allow-list' <<<"$missing" && [ ! -e "$work/no-such-allow-list" ]
    result $? "a missing allow-list refuses to start the proxy" "exit $missing_rc: $(grep -m1 -o 'bind source path.*' <<<"$missing" | cut -c1-160)"
    export CODE_EXECUTOR_SERVERS=$saved_servers
  else
    fail "egress proxy image" "$(tail -3 "$work/egress-build.log")"
  fi
fi
# --- end egress

echo
if [ "$failures" -eq 0 ]; then
  echo "test-docker-security: all checks passed"
else
  echo "test-docker-security: $failures check group(s) failed"
  docker logs --tail 30 "$cid" 2>&1 | sed 's/^/  log: /'
  exit 1
fi
