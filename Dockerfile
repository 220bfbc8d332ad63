# uae-fhir-sandbox: the same server as `npm ci && npm start`, as a non-root container.
#
#   docker build -t uae-fhir-sandbox .
#   docker run --rm -p 8080:8080 uae-fhir-sandbox
#   docker run --rm -p 8080:8080 -v "$PWD/scenarios:/app/scenarios:ro" uae-fhir-sandbox
#
# Every flag is also an environment variable (docker run -e ADMIN_TOKEN=... -e BASE_PATH=/sandbox).

# Build stage: the README's "run from source" steps, npm ci then npm run build.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json README.md ./
# The build runs scripts/ (FHIRPath trees, the dashboard's bundle) and renders the README and docs/ into pages.
COPY scripts ./scripts
COPY docs ./docs
COPY scenarios/README.md ./scenarios/README.md
COPY src ./src
RUN npm run build

# Runtime stage: production dependencies, the compiled server and the shipped scenarios.
FROM node:24-bookworm-slim AS runtime
WORKDIR /app
ENV NODE_ENV=production \
    PORT=8080 \
    HOST=0.0.0.0 \
    SCENARIOS=/app/scenarios
# Memory: a V8 heap limit that fits a 512 MiB container (the process needs about 100 MiB besides the heap). For a
# bigger container, raise it to about 60 % of the limit: -e NODE_OPTIONS=--max-old-space-size=1200 for 2 GiB.
ENV NODE_OPTIONS=--max-old-space-size=320
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY scenarios ./scenarios
# The image's own user "node" (uid 1000), not root.
USER node
EXPOSE 8080
# Reads PORT, so it follows `-e PORT=...`; fails on a non-2xx answer or after 3 s.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/__admin/health',{signal:AbortSignal.timeout(3000)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "dist/cli/main.js", "serve"]
