#!/usr/bin/env bash
# Builds the container image from the Dockerfile with docker or podman (whichever works here), runs it, and checks:
# the HEALTHCHECK turns healthy, a message is answered 200, the server runs as a non-root user, docker stop (SIGTERM)
# ends it cleanly with exit code 0, a state file on a new named volume at /data is writable and what it holds
# survives a new container, and the image is at most 150 MB. Prints the image's size.
#
#   bash scripts/verify-image.sh              IMAGE=uae-fhir-sandbox:verify by default
#   ENGINE=podman bash scripts/verify-image.sh
#
# Needs network access to the base images' registry (Docker Hub); it says so and exits 1 when a base image
# cannot be pulled. podman builds with --format docker: the OCI format has no HEALTHCHECK.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${IMAGE:-uae-fhir-sandbox:verify}"
MAX_MB=150
NAME="uae-fhir-sandbox-verify-$$"
STATE_NAME="uae-fhir-sandbox-verify-state-$$"
VOLUME="uae-fhir-sandbox-verify-data-$$"

fail() {
  echo "verify-image: $*" >&2
  exit 1
}

# The engine: $ENGINE, else docker if its daemon answers, else podman.
engine="${ENGINE:-}"
if [[ -z "$engine" ]]; then
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    engine=docker
  elif command -v podman >/dev/null; then
    engine=podman
  elif command -v docker >/dev/null; then
    fail "docker is installed but its daemon does not answer (docker info failed), and podman is not installed"
  else
    fail "no container engine: install docker or podman"
  fi
fi
build_flags=()
[[ "$engine" == podman ]] && build_flags+=(--format docker)
echo "verify-image: engine $engine ($($engine --version))"

# Every base image of the Dockerfile, pulled first (unless already here) so that a registry out of reach is named
# as the cause.
while read -r base; do
  $engine image inspect "$base" >/dev/null 2>&1 && continue
  if ! output=$($engine pull "$base" 2>&1); then
    fail "cannot pull the base image $base, so the image cannot be built on this machine (the registry is out of reach or refused):
$output"
  fi
done < <(awk 'toupper($1) == "FROM" { print $2 }' Dockerfile | sort -u)

# Containers first: a volume in use cannot be removed.
cleanup() {
  $engine rm -f "$NAME" >/dev/null 2>&1 || true
  $engine rm -f "$STATE_NAME" >/dev/null 2>&1 || true
  $engine volume rm -f "$VOLUME" >/dev/null 2>&1 || true
}
trap cleanup EXIT

$engine build "${build_flags[@]}" -t "$IMAGE" . || fail "$engine build failed"

# start NAME [run options...]: a detached container of the image on a free loopback port, with short health
# intervals, so the check needs seconds, not the image's 30 s.
start() {
  local name=$1
  shift
  $engine run -d --name "$name" -p 127.0.0.1::8080 \
    --health-interval 1s --health-start-period 1s --health-timeout 5s --health-retries 3 "$@" "$IMAGE" >/dev/null
}

# port_of NAME: the host port the container's 8080 is published on.
port_of() {
  local port
  port=$($engine port "$1" 8080/tcp | head -n1 | sed 's/.*://')
  [[ -n "$port" ]] || fail "the container $1 publishes no port for 8080"
  echo "$port"
}

# wait_healthy NAME: until the container's HEALTHCHECK passes; fails after 60 s, or at once if it stops.
wait_healthy() {
  local name=$1 health=""
  for _ in $(seq 1 60); do
    # podman runs health checks from systemd timers, which a container outside systemd has none of: run it here.
    if [[ "$engine" == podman ]]; then podman healthcheck run "$name" >/dev/null 2>&1 || true; fi
    health=$($engine inspect --format '{{.State.Health.Status}}' "$name" 2>/dev/null || true)
    [[ "$health" == healthy ]] && return 0
    [[ "$($engine inspect --format '{{.State.Running}}' "$name")" == true ]] || break
    sleep 1
  done
  fail "the HEALTHCHECK of $name did not pass within 60 s (status: ${health:-none}); logs:
$($engine logs "$name" 2>&1 | tail -n 20)"
}

# stop_cleanly NAME: docker stop (SIGTERM); the server must exit 0 and log that it stopped.
stop_cleanly() {
  local name=$1 code logs
  $engine stop -t 10 "$name" >/dev/null
  code=$($engine inspect --format '{{.State.ExitCode}}' "$name")
  [[ "$code" == 0 ]] || fail "docker stop (SIGTERM) ended $name with exit code $code, not 0; logs:
$($engine logs "$name" 2>&1 | tail -n 20)"
  # The logs read whole first: grep -q leaving early would cut the pipe under pipefail.
  logs=$($engine logs "$name" 2>&1 || true)
  grep -qE '^stopped$|"event":"stopped"' <<<"$logs" || fail "the server in $name did not log that it stopped after SIGTERM"
}

start "$NAME"
port=$(port_of "$NAME")
wait_healthy "$NAME"
echo "verify-image: healthy"

# One add-allergy message (README quick start), in the envelope.
bundle='{"resourceType":"Bundle","type":"message","timestamp":"2026-01-15T09:30:00+04:00","entry":[
{"fullUrl":"urn:uuid:0c3a5a3e-6f3e-4b8e-9d3a-1f2b3c4d5e01","resource":{"resourceType":"MessageHeader","id":"0c3a5a3e-6f3e-4b8e-9d3a-1f2b3c4d5e01","eventCoding":{"system":"https://sandbox.example.ae/events","code":"add-allergy"},"source":{"endpoint":"https://clinic.example.ae/ehr"},"focus":[{"reference":"urn:uuid:7d9f1c2a-3b4e-4f5a-8b6c-9d0e1f2a3b02"}]}},
{"fullUrl":"urn:uuid:7d9f1c2a-3b4e-4f5a-8b6c-9d0e1f2a3b02","resource":{"resourceType":"AllergyIntolerance","clinicalStatus":{"coding":[{"system":"http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical","code":"active"}]},"code":{"coding":[{"system":"http://snomed.info/sct","code":"91936005","display":"Allergy to penicillin"}]},"patient":{"reference":"urn:uuid:2a4b6c8d-0e1f-4a3b-9c5d-7e9f1a3b5c03"}}},
{"fullUrl":"urn:uuid:2a4b6c8d-0e1f-4a3b-9c5d-7e9f1a3b5c03","resource":{"resourceType":"Patient","identifier":[{"system":"urn:ae:emirates-id","value":"784-1990-1234567-6"}]}}]}'
envelope=$(node -e 'process.stdout.write(JSON.stringify({ content: process.argv[1] }))' "$bundle")

# send PORT: posts the message; prints the answer's status line and headers (CRs removed), nothing when there is no
# answer (and never fails, so that the caller's check says what went wrong instead of set -e stopping in silence).
send() {
  curl -s -o /dev/null -D - --max-time 10 -H 'Content-Type: application/json' \
    --data-binary "$envelope" "http://127.0.0.1:$1/uae-fhir/r4/\$process-message" | tr -d '\r' || true
}
status_of() { head -n1 <<<"$1" | awk '{ print $2 }'; }
# header_of HEADERS NAME: the value of a header (names case-insensitive), empty when absent.
header_of() { grep -i "^$2:" <<<"$1" | head -n1 | sed 's/^[^:]*: *//' || true; }

status=$(status_of "$(send "$port")")
[[ "$status" == 200 ]] || fail "the message was answered ${status:-nothing}, not 200"
echo "verify-image: a message answered 200"

uid=$($engine exec "$NAME" id -u)
[[ "$uid" != 0 ]] || fail "the server runs as root"
echo "verify-image: runs as uid $uid"

stop_cleanly "$NAME"
echo "verify-image: SIGTERM stop, exit code 0"

# The state file (README: Running in Docker): a new named volume at /data, which takes the image's /data owner and
# mode, so the non-root server can write its file there. A message, then that container stopped and removed and a
# new one started on the same volume, as a deploy does: the call is still in the journal, an exact resend gets the
# original answer (X-Sandbox-Duplicate: true), and health says the file is ok.
$engine volume create "$VOLUME" >/dev/null
start "$STATE_NAME" -v "$VOLUME:/data" -e STATE_FILE=/data/sandbox.db
port=$(port_of "$STATE_NAME")
wait_healthy "$STATE_NAME"
data=$($engine exec "$STATE_NAME" stat -c '%u %a' /data || true)
[[ "$data" == "1000 700" ]] || fail "/data on a new named volume has owner and mode '$data', not '1000 700'"
first=$(send "$port")
[[ "$(status_of "$first")" == 200 ]] || fail "with a state file, the message was answered $(status_of "$first"), not 200"
call_id=$(header_of "$first" x-sandbox-call-id)
[[ -n "$call_id" ]] || fail "the answer has no X-Sandbox-Call-Id header"
file=$($engine exec "$STATE_NAME" stat -c '%u' /data/sandbox.db 2>/dev/null || true)
[[ "$file" == 1000 ]] || fail "no state file /data/sandbox.db owned by uid 1000 (found: '${file:-none}')"
stop_cleanly "$STATE_NAME"
$engine rm "$STATE_NAME" >/dev/null

start "$STATE_NAME" -v "$VOLUME:/data" -e STATE_FILE=/data/sandbox.db
port=$(port_of "$STATE_NAME")
wait_healthy "$STATE_NAME"
kept=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$port/__admin/calls/$call_id" || true)
[[ "$kept" == 200 ]] || fail "after a new container on the same volume, call $call_id is not in the journal ($kept)"
again=$(send "$port")
[[ "$(status_of "$again")" == 200 ]] || fail "the resend after the restart was answered $(status_of "$again"), not 200"
[[ "$(header_of "$again" x-sandbox-duplicate)" == true ]] ||
  fail "the resend after the restart was not answered as a duplicate (no X-Sandbox-Duplicate: true): the state was not kept"
state=$(curl -s --max-time 10 "http://127.0.0.1:$port/__admin/health" |
  node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => process.stdout.write(String(JSON.parse(s).stateFile?.status)))' ||
  true)
[[ "$state" == ok ]] || fail "health's stateFile.status is '$state', not ok"
stop_cleanly "$STATE_NAME"
echo "verify-image: a state file on a named volume at /data (uid 1000, mode 700) kept call $call_id across containers"

bytes=$($engine image inspect --format '{{.Size}}' "$IMAGE")
mb=$(((bytes + 999999) / 1000000))
echo "verify-image: image $IMAGE is $mb MB ($bytes bytes; target at most $MAX_MB MB)"
((mb <= MAX_MB)) || fail "the image is $mb MB, over $MAX_MB MB"
echo "verify-image: all checks passed"
