# The whole stack on Debian 12: builds the project and runs the embedded
# default (PostgreSQL, Redis, node simulator, indexer, nginx with the module).
# Build from the repository:
#   docker build -t hive-wallet .
# compose.yaml runs the same image as one service per process (the data
# directory below is compose's PostgreSQL volume, owned by postgres).
FROM debian:12
COPY scripts/install-deps /tmp/install-deps
RUN /tmp/install-deps && rm -rf /var/lib/apt/lists/* \
 && install -d -o postgres -g postgres -m 700 /var/lib/postgresql/data
COPY . /opt/hive-wallet
WORKDIR /opt/hive-wallet
RUN scripts/build
ENV WALLET_STATE_DIR=/var/lib/hive-wallet-demo \
    WALLET_NO_BUILD=1 \
    HOST=0.0.0.0 \
    API_BIND_HOST=127.0.0.1
EXPOSE 5002
CMD ["scripts/start"]
