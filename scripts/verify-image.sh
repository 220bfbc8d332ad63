#!/usr/bin/env bash
# Builds the container image from the Dockerfile with docker or podman (whichever works here), runs it, and checks:
# the HEALTHCHECK turns healthy, a message is answered 200, the server runs as a non-root user, docker stop (SIGTERM)
# ends it cleanly with exit code 0, and the image is at most 150 MB. Prints the image's size.
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

cleanup() { $engine rm -f "$NAME" >/dev/null 2>&1 || true; }
trap cleanup EXIT

$engine build "${build_flags[@]}" -t "$IMAGE" . || fail "$engine build failed"

# Short health intervals, so the check needs seconds, not the image's 30 s.
$engine run -d --name "$NAME" -p 127.0.0.1::8080 \
  --health-interval 1s --health-start-period 1s --health-timeout 5s --health-retries 3 "$IMAGE" >/dev/null
port=$($engine port "$NAME" 8080/tcp | head -n1 | sed 's/.*://')
[[ -n "$port" ]] || fail "the container publishes no port for 8080"

health=""
for _ in $(seq 1 60); do
  # podman runs health checks from systemd timers, which a container outside systemd has none of: run it here.
  if [[ "$engine" == podman ]]; then podman healthcheck run "$NAME" >/dev/null 2>&1 || true; fi
  health=$($engine inspect --format '{{.State.Health.Status}}' "$NAME" 2>/dev/null || true)
  [[ "$health" == healthy ]] && break
  [[ "$($engine inspect --format '{{.State.Running}}' "$NAME")" == true ]] || break
  sleep 1
done
[[ "$health" == healthy ]] || fail "the HEALTHCHECK did not pass within 60 s (status: ${health:-none}); logs:
$($engine logs "$NAME" 2>&1 | tail -n 20)"
echo "verify-image: healthy"

# One add-allergy message (README quick start), in the envelope.
bundle='{"resourceType":"Bundle","type":"message","timestamp":"2026-01-15T09:30:00+04:00","entry":[
{"fullUrl":"urn:uuid:0c3a5a3e-6f3e-4b8e-9d3a-1f2b3c4d5e01","resource":{"resourceType":"MessageHeader","id":"0c3a5a3e-6f3e-4b8e-9d3a-1f2b3c4d5e01","eventCoding":{"system":"https://sandbox.example.ae/events","code":"add-allergy"},"source":{"endpoint":"https://clinic.example.ae/ehr"},"focus":[{"reference":"urn:uuid:7d9f1c2a-3b4e-4f5a-8b6c-9d0e1f2a3b02"}]}},
{"fullUrl":"urn:uuid:7d9f1c2a-3b4e-4f5a-8b6c-9d0e1f2a3b02","resource":{"resourceType":"AllergyIntolerance","clinicalStatus":{"coding":[{"system":"http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical","code":"active"}]},"code":{"coding":[{"system":"http://snomed.info/sct","code":"91936005","display":"Allergy to penicillin"}]},"patient":{"reference":"urn:uuid:2a4b6c8d-0e1f-4a3b-9c5d-7e9f1a3b5c03"}}},
{"fullUrl":"urn:uuid:2a4b6c8d-0e1f-4a3b-9c5d-7e9f1a3b5c03","resource":{"resourceType":"Patient","identifier":[{"system":"urn:ae:emirates-id","value":"784-1990-1234567-6"}]}}]}'
envelope=$(node -e 'process.stdout.write(JSON.stringify({ content: process.argv[1] }))' "$bundle")
status=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H 'Content-Type: application/json' \
  --data-binary "$envelope" "http://127.0.0.1:$port/uae-fhir/r4/\$process-message")
[[ "$status" == 200 ]] || fail "the message was answered $status, not 200"
echo "verify-image: a message answered 200"

uid=$($engine exec "$NAME" id -u)
[[ "$uid" != 0 ]] || fail "the server runs as root"
echo "verify-image: runs as uid $uid"

$engine stop -t 10 "$NAME" >/dev/null
code=$($engine inspect --format '{{.State.ExitCode}}' "$NAME")
[[ "$code" == 0 ]] || fail "docker stop (SIGTERM) ended the server with exit code $code, not 0"
$engine logs "$NAME" 2>&1 | grep -qE '^stopped$|"event":"stopped"' || fail "the server did not log that it stopped after SIGTERM"
echo "verify-image: SIGTERM stop, exit code 0"

bytes=$($engine image inspect --format '{{.Size}}' "$IMAGE")
mb=$(((bytes + 999999) / 1000000))
echo "verify-image: image $IMAGE is $mb MB ($bytes bytes; target at most $MAX_MB MB)"
((mb <= MAX_MB)) || fail "the image is $mb MB, over $MAX_MB MB"
echo "verify-image: all checks passed"
