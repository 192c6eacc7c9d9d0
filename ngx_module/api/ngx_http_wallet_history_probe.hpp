// The probes of the databases of a worker's pool: every interval the worker
// asks each database of API_DATABASE_URL whether it is a standby and how far
// its replay is behind (api::database_statement), as a statement of its own
// pool bound to that database (PgOp::only): asynchronous like every other,
// never on a request's path. The answers are this worker's (as /health is):
// its /metrics shows them (wallet_history_database_*), and the status page
// reads them there.
#pragma once

#include <memory>
#include <vector>

#include "api_metrics.hpp"
#include "ngx_http_wallet_history_pg.hpp"

namespace wallet::ngx {

class DatabaseProbes {
public:
    // The first probes go out at once; `pool` outlives this object.
    DatabaseProbes(PgPool& pool, ngx_msec_t interval_ms, ngx_log_t* log);
    ~DatabaseProbes();
    DatabaseProbes(const DatabaseProbes&) = delete;
    DatabaseProbes& operator=(const DatabaseProbes&) = delete;

    // One per database of the pool, in its order.
    const std::vector<api::DatabaseGauges>& gauges() const { return gauges_; }

    // Used by the timer and the statements' completion.
    void probe_all();
    void answered(std::size_t server, PgOutcome outcome, PGresult* rows);

private:
    struct Probe {
        DatabaseProbes* owner = nullptr;
        std::size_t server = 0;
        PgOp op;
        bool running = false;
    };

    PgPool& pool_;
    ngx_msec_t interval_ms_;
    std::vector<api::DatabaseGauges> gauges_;
    std::vector<std::unique_ptr<Probe>> probes_;
    ngx_event_t timer_{};
};

}  // namespace wallet::ngx
