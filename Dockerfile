# Portico's container image, for those who build with Docker:
#   docker build -t portico:$(node -p 'require("./package.json").version') \
#     --build-arg VERSION=$(node -p 'require("./package.json").version') --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(date -u -d @$(git log -1 --format=%ct) +%Y-%m-%dT%H:%M:%SZ) .
#
# KEEP EQUIVALENT TO scripts/build-image.sh, which builds the same image without Docker or a registry (mmdebstrap +
# umoci) and is the one the tests build, inspect and run: the tests cannot build this file (no registry is reachable
# for FROM there). Both take /app from scripts/stage-app.sh, and Node from it too (stage-app.sh runtime: the binary
# of the lockfile's node-linux-<arch> package, which npm ci installs, as /usr/local/bin/node; not Debian's nodejs);
# both run on Debian trixie with ca-certificates, tini and the C++ runtime libraries that binary links, as user
# portico (10001:10001) owning /data, with the same entrypoint, command, port, environment and labels.
# Differences: the base here is debian:trixie-slim (apt included) where the script installs Debian's essential
# packages only, and this build is not bit-for-bit reproducible.

ARG NODE_IMAGE=node:24-trixie-slim
ARG DEBIAN_IMAGE=debian:trixie-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY core core
COPY api api
COPY operator operator
COPY sdk sdk
COPY assets assets
COPY bin bin
COPY examples examples
# The real brand lists the demo catalog names.
COPY test/fixtures/brands/lantern-prod_resources test/fixtures/brands/lantern-prod_resources
COPY scripts/stage-app.sh scripts/stage-app.sh
# Owned by root (COPY's default) and not writable by the app's user, as the script's layer.
RUN npm run build \
 && bash scripts/stage-app.sh app /stage/app \
 && bash scripts/stage-app.sh modules /stage/app \
 && bash scripts/stage-app.sh runtime /stage/runtime \
 && chmod -R a+rX,u+w,go-w /stage/app /stage/runtime

FROM ${DEBIAN_IMAGE}
# No documentation, manuals or translations, as the script's dpkg options.
RUN printf '%s\n' 'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' 'path-exclude=/usr/share/man/*' \
      'path-exclude=/usr/share/info/*' 'path-exclude=/usr/share/locale/*' 'path-exclude=/usr/share/lintian/*' \
      >/etc/dpkg/dpkg.cfg.d/portico-slim \
 && apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tini libstdc++6 libgcc-s1 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /var/cache/debconf/*-old /var/lib/dpkg/*-old \
 && echo 'portico:x:10001:10001:Portico:/data:/usr/sbin/nologin' >>/etc/passwd \
 && echo 'portico:x:10001:' >>/etc/group \
 && install -d -m 0750 -o 10001 -g 10001 /data
# Node 24: the npm registry's build the lockfile pins, as the build stage's npm ci installed it.
COPY --from=build /stage/runtime/usr/local /usr/local
COPY --from=build /stage/app /app

# NODE_USE_SYSTEM_CA: Node trusts the system's certificates (ca-certificates) besides its own, as Debian's did.
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    NODE_ENV=production \
    NODE_USE_SYSTEM_CA=1 \
    HOST=0.0.0.0 \
    PORTICO_DATA_DIR=/data
WORKDIR /app
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["/usr/bin/tini", "--"]
# The API; the operator is the same image with: node /app/bin/portico-operator.js run
CMD ["node", "/app/bin/portico.js", "serve"]

ARG VERSION
ARG REVISION
ARG CREATED
ARG SOURCE
LABEL org.opencontainers.image.title="portico" \
      org.opencontainers.image.description="Portico: the platform API and the BrandCatalog operator (node /app/bin/portico-operator.js run)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="debian:trixie"
