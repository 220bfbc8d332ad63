# uae-fhir-sandbox: the server bundled into one file, on Alpine with only the node binary, as a non-root container.
#
#   docker build -t uae-fhir-sandbox .                  (podman: podman build --format docker ..., to keep HEALTHCHECK)
#   docker run --rm -p 8080:8080 uae-fhir-sandbox
#   docker run --rm -p 8080:8080 -v "$PWD/scenarios:/app/scenarios:ro" uae-fhir-sandbox
#   docker run --rm -p 8080:8080 -v sandbox-data:/data -e STATE_FILE=/data/sandbox.db uae-fhir-sandbox
#       (the state kept in the named volume sandbox-data, across restarts and new containers: docs/state-file.md)
#
# Every flag is also an environment variable (docker run -e ADMIN_TOKEN=... -e BASE_PATH=/sandbox).
# scripts/verify-image.sh builds this image, runs it and checks it (health, a message, non-root, SIGTERM, size).

# Build stage: npm ci, then npm run build: tsc, the FHIRPath trees parsed ahead of time, the dashboard's client and
# pages (scripts/build-ui.mjs), and esbuild bundling src/cli/main.ts and its dependencies into bundle/server.cjs
# with its entry bundle/uae-fhir-sandbox.mjs (scripts/bundle.mjs), with the dashboard's assets in bundle/assets/.
FROM node:24-alpine3.22 AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json README.md ./
# The build runs scripts/ (FHIRPath trees, the dashboard's bundle, the server's bundle) and renders the README,
# docs/ and scenarios/README.md into the dashboard's pages.
COPY scripts ./scripts
COPY docs ./docs
COPY scenarios/README.md ./scenarios/README.md
COPY src ./src
RUN npm run build

# Runtime stage: Alpine, the C++ runtime node links against, and the node binary alone (no npm, yarn or corepack):
# node:24-bookworm-slim is about 220 MB and a distroless Node 24 (glibc, libstdc++ and the 127 MB binary) about 150 MB
# before the app; this is about 135 MB (scripts/verify-image.sh reports the size and fails above 150 MB).
# No node_modules, no source maps, no type declarations: the bundle, the data files it reads, the dashboard's assets
# and rendered docs, the scenarios, the conformance plans (found beside the bundle, as the scenarios are).
FROM alpine:3.22 AS runtime
# /data: where a state file goes (-v sandbox-data:/data -e STATE_FILE=/data/sandbox.db). Owned by node and private
# (the file holds every workspace): Docker copies this directory's owner and mode into a new, empty named volume, so
# the non-root server can write there; a host folder mounted instead keeps its own owner (give it to uid 1000).
# No VOLUME: the state file is opt-in, and a VOLUME would add an empty anonymous volume to every run in memory.
RUN apk add --no-cache libstdc++ && addgroup -S -g 1000 node && adduser -S -D -H -u 1000 -G node node && \
    mkdir -m 700 /data && chown node:node /data
COPY --from=build /usr/local/bin/node /usr/local/bin/node
WORKDIR /app
ENV NODE_ENV=production \
    PORT=8080 \
    HOST=0.0.0.0 \
    SCENARIOS=/app/scenarios
# Memory: a V8 heap limit that fits a 512 MiB container (the process needs about 100 MiB besides the heap). For a
# bigger container, raise it to about 60 % of the limit: -e NODE_OPTIONS=--max-old-space-size=1200 for 2 GiB.
ENV NODE_OPTIONS=--max-old-space-size=320
COPY --from=build /app/bundle/uae-fhir-sandbox.mjs /app/bundle/server.cjs /app/bundle/r4-definitions.json /app/bundle/fhirpath-trees.json ./bundle/
COPY --from=build /app/bundle/assets ./bundle/assets
COPY scenarios ./scenarios
COPY conformance ./conformance
# V8's code cache for bundle/server.cjs, which saves about a third of a cold start (docs/benchmarks.md): made here, by
# this node under this NODE_OPTIONS, as V8 takes a cache only from the same binary and V8 flags (a container started
# with other V8 flags compiles as without one; Node 24 does not count the heap sizes). A training run: serve, answer
# one message, stop; the script is mounted from the build stage, not copied into the image.
RUN --mount=type=bind,from=build,source=/app/scripts/write-code-cache.mjs,target=/tmp/write-code-cache.mjs \
    node /tmp/write-code-cache.mjs bundle
# User "node" (uid 1000, as in the official node images), not root.
USER node
EXPOSE 8080
# Reads PORT, so it follows `-e PORT=...`; fails on a non-2xx answer or after 3 s.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/__admin/health',{signal:AbortSignal.timeout(3000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node is PID 1 and handles SIGTERM itself: docker stop finishes calls in flight and exits 0.
CMD ["node", "bundle/uae-fhir-sandbox.mjs", "serve"]
