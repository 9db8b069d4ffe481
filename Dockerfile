# One image for both nodecare programs: `nodecare-agent` (DaemonSet) and `nodecare-controller` (Deployment)
# are on PATH; the manifests pick one with `command`. Build: docker build -t nodecare:0.1.0 .
# The test suite builds this very file with BuildKit (test/image/build.sh), handing it locally assembled
# Debian bookworm bases in place of the two below.

# NODE_IMAGE is the build stage's base: the Node version package.json pins, on Debian bookworm (glibc).
ARG NODE_IMAGE=node:24.21.0-bookworm-slim
# RUNTIME_IMAGE is the runtime's base: the same Debian release, without Node, npm or corepack.
ARG RUNTIME_IMAGE=debian:bookworm-slim

# build compiles TypeScript to dist/ and keeps only the production dependencies.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# No install scripts: nothing nodecare runs needs one (the devDependency that downloads a Node binary for
# the npm scripts is not wanted in the image).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY api ./api
COPY lib ./lib
COPY agent ./agent
COPY controller ./controller
COPY cli ./cli
# Type declarations, source maps and TypeScript sources are never loaded at run time: about a third of
# node_modules, dropped here, before the runtime stage copies it.
RUN npx tsc -p tsconfig.build.json \
  && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
  && find dist node_modules -type f \( -name '*.map' -o -name '*.ts' -o -name '*.mts' -o -name '*.cts' \) -delete \
  && chmod 0755 dist/agent/main.js dist/controller/main.js dist/cli/main.js

# The runtime: Debian, the node binary, the compiled code, production dependencies and the gRPC protos the
# probes load; nothing else (no npm, no compiler, no sources). Every file arrives by COPY, so no layer
# carries something a later one deletes.
FROM ${RUNTIME_IMAGE}
ENV NODE_ENV=production
COPY --from=build /usr/local/bin/node /usr/local/bin/node
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY api/proto ./api/proto
# The executables as package.json "bin" names them (`#!/usr/bin/env node` scripts).
RUN ln -s /app/dist/agent/main.js /usr/local/bin/nodecare-agent \
  && ln -s /app/dist/controller/main.js /usr/local/bin/nodecare-controller \
  && ln -s /app/dist/cli/main.js /usr/local/bin/kubectl-nodecare
# Non-root by default (the controller and the CLI); the agent DaemonSet runs as uid 0 with every capability
# dropped, for the root-owned sockets it probes (manifests/base/agent-daemonset.yaml).
USER 65532:65532
ENTRYPOINT ["nodecare-controller"]
