# One image for the API (`npm start`) and the import workers (`npm run worker`); see docker-compose.yml.
FROM node:20-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
# tsx (a dependency) runs the TypeScript sources directly; no build step.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY tsconfig.json ./
COPY src ./src
COPY scripts ./scripts
RUN mkdir -p /app/data && chown node:node /app/data
USER node
ENV DATA_DIR=/app/data PORT=3000
EXPOSE 3000
CMD ["npm", "start"]
