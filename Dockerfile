# report-sync on the current Node LTS line. Multi-stage: the build stage compiles the native
# modules (with the compilers) and bundles the TypeScript into dist/, then keeps production dependencies
# only; the runtime stage gets dist/, those dependencies and the shipped defaults, and runs as a
# non-root user. No compiler, no TypeScript, no tsx and no native build leftovers in the image.
FROM node:26-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# The project's own prepare script (the build) needs the sources, which come later for the layer
# cache: install without scripts, then build the native modules alone.
RUN npm ci --ignore-scripts --no-audit --no-fund && npm rebuild better-sqlite3 msgpackr-extract
COPY tsconfig.json ./
COPY scripts/build.mjs ./scripts/build.mjs
COPY src ./src
COPY jobs ./jobs
RUN npm run build \
  && npm prune --omit=dev --no-audit --no-fund \
  && cd node_modules/better-sqlite3 \
  && find build -mindepth 1 -not -path 'build/Release' -not -path 'build/Release/better_sqlite3.node' -delete \
  && rm -rf deps src binding.gyp

FROM node:26-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY package.json ./
COPY config/default.json ./config/default.json
RUN mkdir -p /app/data && chown node:node /app/data
USER node
VOLUME ["/app/data"]
# Settings: config/local.json in a folder mounted at /app/config (or REPORT_SYNC_CONFIG_DIR), or
# REPORT_SYNC_* variables; credentials and addresses: REPORT_* variables.
ENTRYPOINT ["node", "dist/src/cli/bin.js"]
CMD ["--help"]
