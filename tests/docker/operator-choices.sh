# The operator's two choices when starting the shipped compose.yaml, shared by the container
# suite (test-docker-security.sh) and the scale-out test (tests/docker/scale-out.sh): a fresh
# bearer token in a file readable by uid 1001, and a free loopback port to publish. Sourced, not
# run. Sets `port` and exports what compose.yaml reads.
#
#   operator_choices IMAGE WORKDIR     # writes WORKDIR/http_token

operator_choices() {
  local image=$1 work=$2
  head -c 48 /dev/urandom | base64 | tr -d '/+=\n' >"$work/http_token"
  chmod 0444 "$work/http_token"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  export CODE_EXECUTOR_IMAGE=$image
  export CODE_EXECUTOR_TOKEN_FILE=$work/http_token
  export CODE_EXECUTOR_PUBLISH=127.0.0.1:$port
}
