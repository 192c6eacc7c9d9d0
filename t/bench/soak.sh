#!/usr/bin/env bash
# Soak with faults (t/bench/run soak): the whole stack under mixed HTTP and
# WebSocket load while PostgreSQL, Redis, the node and the router's upstream
# are killed or restarted at random moments, every limit at its shipped default
# (the clients spread over SOAK_CLIENT_ADDRESSES=80 loopback addresses);
# t/bench/soak.py does the work and says what is checked. About 8 minutes
# (SOAK_SECONDS=300 of faults after 90 s of warm-up; SOAK_SEED=N repeats a
# run's fault moments).
#
# Ends with one line:
#   RESULT soak requests=.. unexpected_errors=.. worker_rss_growth_kb=.. fd_growth=.. table_equal=.. ...
#   rate_limited=.. client_addresses=.. ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${WALLET_BUILD_DIR:?set by t/bench/run}
for tool in t/sim/hive-node-sim indexer/wallet-indexer common/wallet-db-setup t/backends/router-test-backend \
            ngx_module/ngx_http_wallet_module.so; do
  [ -e "$build/$tool" ] || { echo "soak.sh: missing $build/$tool (build first)" >&2; exit 1; }
done
# Debian's python3 has the websockets module (python3-websockets, scripts/install-deps).
exec /usr/bin/python3 "$here/soak.py"
