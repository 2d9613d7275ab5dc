# report-sync on the current Node LTS line. Multi-stage: native modules are built in the first
# stage (with the compilers), the runtime stage gets production dependencies only and runs as a
# non-root user.
FROM node:24-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY package.json ./
COPY config ./config
COPY src ./src
COPY jobs ./jobs
RUN mkdir -p /app/data && chown node:node /app/data
USER node
VOLUME ["/app/data"]
ENTRYPOINT ["node", "src/cli/bin.mjs"]
CMD ["--help"]
