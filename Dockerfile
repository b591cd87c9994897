# One image for the API and the import workers; see docker-compose.yml.
# Node 24, the LTS line the service ships on; the tag is pinned so a rebuild gets the same runtime,
# and names the version of .nvmrc, the one CI runs the whole suite on.
FROM node:24.21.0-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
# patches/: fixes to dependencies that npm ci applies (postinstall: patch-package).
COPY patches ./patches
# Every entry point is built into JavaScript (`npm run build`, esbuild: dist/), as `npm start`
# and `npm run worker` run it.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY tsconfig.json ./
COPY src ./src
COPY scripts ./scripts
RUN npm run build
RUN mkdir -p /app/data && chown node:node /app/data
USER node
ENV DATA_DIR=/app/data PORT=3000
EXPOSE 3000
# node itself, not npm: SIGTERM (docker stop) must reach the process that shuts down gracefully.
# The same command as `npm start`; the worker's is `npm run worker`'s (see docker-compose.yml).
CMD ["node", "dist/main-api.mjs"]
