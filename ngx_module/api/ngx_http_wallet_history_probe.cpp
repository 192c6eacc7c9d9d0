// The workers' probes of their databases (see the header).
#include "ngx_http_wallet_history_probe.hpp"

#include "api_response.hpp"
#include "api_sql.hpp"
#include "ngx_wallet_guard.hpp"

namespace wallet::ngx {

namespace {

void probe_timer(ngx_event_t* ev) { static_cast<DatabaseProbes*>(ev->data)->probe_all(); }
constexpr auto timer_handler = guarded<"wallet_history: database probe timer", probe_timer>;

void probe_done(PgOp* op, PgOutcome outcome, PGresult* rows) {
    auto* owner = static_cast<DatabaseProbes*>(op->data);
    owner->answered(op->only, outcome, rows);
}
constexpr auto done_handler = guarded<"wallet_history: database probe", probe_done>;

}  // namespace

DatabaseProbes::DatabaseProbes(PgPool& pool, ngx_msec_t interval_ms, ngx_log_t* log)
    : pool_(pool), interval_ms_(interval_ms) {
    for (std::size_t i = 0; i < pool.server_count(); ++i) {
        gauges_.push_back(api::DatabaseGauges{pool.server_name(i), std::nullopt});
        auto probe = std::make_unique<Probe>();
        probe->owner = this;
        probe->server = i;
        probes_.push_back(std::move(probe));
    }
    timer_.handler = timer_handler;
    timer_.data = this;
    timer_.log = log;
    // A worker shutting down does not wait for the next probe.
    timer_.cancelable = 1;
    ngx_add_timer(&timer_, 1);
}

DatabaseProbes::~DatabaseProbes() {
    if (timer_.timer_set) ngx_del_timer(&timer_);
    for (auto& probe : probes_) {
        if (probe->running) pool_.cancel(&probe->op);
    }
}

void DatabaseProbes::probe_all() {
    if (ngx_exiting) return;
    ngx_add_timer(&timer_, interval_ms_);
    for (auto& probe : probes_) {
        // One at a time per database: a probe still waiting (a busy pool, a
        // slow database) keeps its place and the last answer stands.
        if (probe->running) continue;
        const api::StatementCall call = api::database_statement();
        probe->op = PgOp{};
        probe->op.statement = call.name;
        probe->op.params = call.params;
        probe->op.done = done_handler;
        probe->op.data = this;
        probe->op.only = probe->server;
        probe->running = true;
        pool_.submit(&probe->op);
    }
}

void DatabaseProbes::answered(std::size_t server, PgOutcome outcome, PGresult* rows) {
    if (server >= probes_.size()) return;
    probes_[server]->running = false;
    gauges_[server].reading = outcome == PgOutcome::Rows ? api::database_reading(rows) : std::nullopt;
}

}  // namespace wallet::ngx
