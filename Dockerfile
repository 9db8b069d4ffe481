# syntax=docker/dockerfile:1
# One image for both nodecare programs: `nodecare-agent` (DaemonSet) and `nodecare-controller` (Deployment)
# are on PATH; the manifests pick one with `command`. Build: docker build -t nodecare:0.1.0 .

# NODE_IMAGE is the base of both stages: Node 24 (package.json "engines"), Alpine for a small image.
ARG NODE_IMAGE=node:24-alpine

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
RUN npx tsc -p tsconfig.build.json \
  && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
  && find dist -name '*.map' -delete

# The runtime: Node 24, the compiled code, production dependencies, the gRPC protos the probes load, and
# nothing else (no compiler, no npm cache, no sources).
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY api/proto ./api/proto
# The executables as package.json "bin" names them.
RUN chmod 0755 dist/agent/main.js dist/controller/main.js dist/cli/main.js \
  && ln -s /app/dist/agent/main.js /usr/local/bin/nodecare-agent \
  && ln -s /app/dist/controller/main.js /usr/local/bin/nodecare-controller \
  && ln -s /app/dist/cli/main.js /usr/local/bin/kubectl-nodecare \
  && rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack /root/.npm
# Non-root by default (the controller and the CLI); the agent DaemonSet runs as uid 0 with every capability
# dropped, for the root-owned sockets it probes (manifests/base/agent-daemonset.yaml).
USER 65532:65532
ENTRYPOINT ["nodecare-controller"]
