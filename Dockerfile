# syntax=docker/dockerfile:1
# damhub's container image: one hub node (docs/operating.md, "Container").
#
#   docker build -t damhub .
#   docker run -d -p 127.0.0.1:8080:8080 -v damhub-data:/var/lib/damhub \
#     -e DAMHUB_PUBLIC_URL=https://dam.example.com damhub
#
# The build steps are deploy/build.sh, which CI runs in a Debian root file system of the same
# release (.ci/deploy-check): the CI machine cannot pull this base image or run containers, so
# this file itself is not built there (docs/operating.md, "What was run here and what was not").

# The Node LTS .ci/run tests on (NODE_LTS_VERSION there; test/deploy/container.test.ts keeps the
# two equal), on Debian bookworm.
ARG NODE_VERSION=24.21.0

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /src
COPY . .
# An npm registry mirror, a proxy's CA or a token: pass your npm configuration as a build secret
# (docker build --secret id=npmrc,src=$HOME/.npmrc .); without it npm's defaults apply. The cache
# mount keeps downloaded packages between builds.
RUN --mount=type=secret,id=npmrc,target=/root/.npmrc \
    --mount=type=cache,target=/root/.npm \
    deploy/build.sh app /src /app

FROM node:${NODE_VERSION}-bookworm-slim
LABEL org.opencontainers.image.title="damhub" \
      org.opencontainers.image.description="A self-hostable hub between partner platforms and DAM systems" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /app /app
# The user damhub (uid/gid 10001) and its data directory /var/lib/damhub (0700).
RUN /app/deploy/build.sh user /var/lib/damhub
USER 10001:10001
WORKDIR /app
# 0.0.0.0: the port is published or reached over the container network; put the TLS proxy in
# front and set DAMHUB_PUBLIC_URL to its https:// origin. Everything else: DAMHUB_* variables.
ENV DAMHUB_HOST=0.0.0.0 \
    DAMHUB_PORT=8080 \
    DAMHUB_DATA_DIR=/var/lib/damhub
# Keys, the admin key, the SQLite store, thumbnails: keep this volume, and back it up.
VOLUME ["/var/lib/damhub"]
EXPOSE 8080
# /readyz: 200 once the hub's stores answer, 503 while one is down (cluster mode: PostgreSQL or
# Redis). A node that is not ready is taken out of rotation; Docker restarts nothing for it.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["node", "/app/deploy/readyz.mjs"]
# The hub drains in-flight requests on SIGTERM (up to 10 s) and exits 0. Give `docker stop` more
# than that (docker stop -t 30; compose: stop_grace_period).
STOPSIGNAL SIGTERM
# node itself, not npm (npm would not pass the signal on). Under `docker run --init` or compose's
# `init: true`, a small init reaps any orphaned process; the hub also runs as PID 1 (it handles
# SIGTERM and SIGINT itself).
CMD ["node", "/app/bin/damhub.js", "serve"]
