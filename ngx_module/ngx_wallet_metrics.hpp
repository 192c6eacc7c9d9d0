// The one metrics page of the module file: the router's location
// (`jsonrpc_router_metrics`) asks the wallet_history API for its part.
#pragma once

#include "metrics_text.hpp"

// Appends the wallet_history API's metrics of the running configuration;
// nothing when the configuration does not serve the API.
void ngx_http_wallet_history_write_metrics(metrics::TextWriter& out);
