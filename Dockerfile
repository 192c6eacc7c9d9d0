# The whole stack on Debian 12: builds the project and runs the embedded
# default (PostgreSQL, Redis, node simulator, indexer, nginx with the module).
# Build from the directory that holds both this repository and shared/:
#   docker build -f <repo>/Dockerfile -t hive-wallet .
FROM debian:12
ARG REPO=main
COPY ${REPO}/scripts/install-deps /tmp/install-deps
RUN /tmp/install-deps && rm -rf /var/lib/apt/lists/*
COPY shared /opt/shared
COPY ${REPO} /opt/hive-wallet
WORKDIR /opt/hive-wallet
RUN scripts/build
ENV WALLET_STATE_DIR=/var/lib/hive-wallet-demo \
    WALLET_FIXTURES_DIR=/opt/shared/fixtures/hive \
    WALLET_NO_BUILD=1 \
    HOST=0.0.0.0 \
    API_BIND_HOST=127.0.0.1
EXPOSE 5002
CMD ["scripts/start"]
