#!/usr/bin/env bash
# Abuse benchmark of the JSON-RPC router (t/bench/run abuse): honest HTTP and
# WebSocket clients beside one abusive client address that runs, in turn,
# amplifying batches, a WebSocket flood of uncached calls, slow readers, slow
# POST bodies, large-entry cache hits and key spraying, against the shipped
# router location, routing file and Redis memory bound; t/bench/abuse.py does
# the work and says what is measured. About 7 minutes (ABUSE_PHASE_SECONDS).
#
# Ends with one line:
#   RESULT abuse attacks=.. worst_honest_ratio=.. honest_errors=.. peak_worker_rss_mb=.. peak_node_concurrency=.. ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${WALLET_BUILD_DIR:?set by t/bench/run}
for tool in t/sim/hive-node-sim t/backends/router-test-backend ngx_module/ngx_http_wallet_module.so; do
  [ -e "$build/$tool" ] || { echo "abuse.sh: missing $build/$tool (build first)" >&2; exit 1; }
done
# Debian's python3 has the websockets module (python3-websockets, scripts/install-deps).
exec /usr/bin/python3 "$here/abuse.py"
