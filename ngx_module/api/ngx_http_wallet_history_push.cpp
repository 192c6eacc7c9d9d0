// Push subscriptions of one worker (see the header).
#include "ngx_http_wallet_history_push.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "api_metrics.hpp"
#include "api_request.hpp"
#include "api_response.hpp"
#include "api_sql.hpp"
#include "jsonrpc_writer.hpp"
#include "ngx_http_wallet_history_pg.hpp"
#include "ngx_wallet_guard.hpp"
#include "wallet/json_util.hpp"
#include "wallet/pg.hpp"
#include "wallet/wallet_event.hpp"

namespace wallet::push {

namespace {

using ngx::PgOp;
using ngx::PgOutcome;

// Rows of one live fetch and of one page of a subscription's catch-up.
constexpr int kFetchRows = 1000;
constexpr int kCatchUpRows = 500;
// The live fetch reads by block range (wh_push_range) when the lowest
// position is at most this many blocks below the notified head, else by
// account (wh_push). By account costs two index probes per subscribed
// account whatever the distance; by block, every event of the range: 100
// blocks (5 minutes of Hive) are some 10,000-20,000 rows, less than the
// probes of a few thousand accounts, and a hub that fell behind catches up
// account by account.
constexpr std::int64_t kRangeBlocks = 100;
// After a failed statement or a lost listener, the next try waits this
// long, doubling up to the maximum.
constexpr ngx_msec_t kRetryMinMs = 100;
constexpr ngx_msec_t kRetryMaxMs = 5000;

// A position above every event of its block (block_seq * 100 + role is below it).
constexpr std::int64_t kAfterBlock = 2147483647;

// A row's place in the order of delivery: the store's keyset, then the
// account's name (rows of one op for several accounts share the keyset).
struct Key {
    std::int64_t block_num = 0;
    std::int64_t position = 0;  // block_seq * 100 + role code
    std::string account;
    auto operator<=>(const Key&) const = default;
};


Key key_of(const api::PushedEvent& e) { return Key{e.block_num, e.position, e.account}; }

class Hub;

struct Subscription {
    enum class State { Starting, CatchingUp, Live, Stalled };

    Hub* hub = nullptr;
    std::string id;
    Client* client = nullptr;
    std::vector<std::string> accounts;  // sorted
    api::PageQuery filter;
    std::string fingerprint;  // of get_wallet_history with this filter: the cursors' binding
    Key last;                 // the last event delivered (or the start)
    bool has_start = false;   // `last` is known (a cursor, or the head was read)
    State state = State::Starting;
    PgOp op;  // its head read or catch-up page
    bool op_running = false;
    // Live: the first fetch that includes it (Hub::fetch_seq_), and its
    // place in Hub::live_.
    std::uint64_t live_from = 0;
    std::size_t live_index = 0;

    bool matches(const api::PushedEvent& e) const {
        if (!filter.op_types.empty()) return std::binary_search(filter.op_types.begin(), filter.op_types.end(), e.op_type);
        return filter.all_types || !e.wide;
    }
};

void subscription_done(PgOp* op, PgOutcome outcome, PGresult* rows);
void fetch_done(PgOp* op, PgOutcome outcome, PGresult* rows);
void listen_done(PgOp* op, PgOutcome outcome, PGresult* rows);
void retry_timer(ngx_event_t* ev);
void on_notified(void* data, const char* payload);
void on_lost(void* data);
constexpr auto subscription_handler = ngx::guarded<"wallet_history: push subscription", subscription_done>;
constexpr auto fetch_handler = ngx::guarded<"wallet_history: push fetch", fetch_done>;
constexpr auto listen_handler = ngx::guarded<"wallet_history: push listener", listen_done>;
constexpr auto retry_handler = ngx::guarded<"wallet_history: push retry", retry_timer>;
constexpr auto notified_handler = ngx::guarded<"wallet_history: push notification", on_notified>;

class Hub {
public:
    explicit Hub(const ApiContext& api) : api_(api) {
        ngx::PgPoolSettings settings = *api.pool_settings;
        // The first database of the list: notifications come from the
        // primary (a standby neither sends nor receives them).
        settings.servers.resize(1);
        settings.servers[0]["application_name"] = "wallet_history_push";
        settings.max_connections = 1;
        settings.notified = notified_handler;
        settings.lost = on_lost;
        settings.listener = this;
        listener_ = std::make_unique<ngx::PgPool>(std::move(settings), ngx_cycle->log);
        listen_op_.statement = "wh_push_listen";
        listen_op_.done = listen_handler;
        listen_op_.data = this;
        fetch_op_.statement = "wh_push";
        fetch_op_.done = fetch_handler;
        fetch_op_.data = this;
        fetch_op_.only = 0;
        retry_.handler = retry_handler;
        retry_.data = this;
        retry_.log = ngx_cycle->log;
        retry_.cancelable = 1;
    }

    ~Hub() {
        count(&api::PushCounters::subscribers, -static_cast<std::int64_t>(subs_.size()));
        count(&api::PushCounters::connections, -static_cast<std::int64_t>(by_client_.size()));
        if (retry_.timer_set) ngx_del_timer(&retry_);
        if (fetching_) api_.pool->cancel(&fetch_op_);
        for (auto& [id, sub] : subs_) {
            if (sub->op_running) api_.pool->cancel(&sub->op);
        }
        if (listen_running_) listener_->cancel(&listen_op_);
    }

    bool serves(const ApiContext& api) const { return api.pool == api_.pool; }
    bool holds(const Client& client) const { return by_client_.contains(const_cast<Client*>(&client)); }
    api::PushCounters* counters() const { return api_.counters; }

    std::string subscribe(Client& client, api::PushRequest& request, const Limits& limits) {
        auto& mine = by_client_[&client];
        if (mine.size() >= limits.subscriptions) {
            return jsonrpc::error_response(request.id_json, jsonrpc::kInvalidParams,
                                           "too many subscriptions on this connection (at most " +
                                               std::to_string(limits.subscriptions) + ")");
        }
        auto sub = std::make_unique<Subscription>();
        sub->hub = this;
        sub->id = std::to_string(next_id_++);
        sub->client = &client;
        sub->accounts = std::move(request.accounts);
        sub->filter = std::move(request.filter);
        sub->fingerprint = api::query_fingerprint(api::Method::GetWalletHistory, sub->filter);
        sub->op.data = sub.get();
        sub->op.done = subscription_handler;
        sub->op.only = 0;
        if (request.after) {
            const auto role = parse_role(request.after->role);
            sub->last = Key{request.after->block_num,
                            static_cast<std::int64_t>(request.after->block_seq) * 100 + (role ? role_code(*role) : 0),
                            request.after_account};
            sub->has_start = true;
        }
        Subscription* s = sub.get();
        if (mine.empty()) count(&api::PushCounters::connections, 1);
        count(&api::PushCounters::subscribers, 1);
        mine.push_back(s->id);
        subs_.emplace(s->id, std::move(sub));
        ensure_listening();
        start(*s);  // its rows come from the event loop, after this answer
        std::string out(jsonrpc::kResultHead);
        out += "{\"subscription\":";
        json::append_quoted(out, s->id);
        out += '}';
        jsonrpc::append_response_id(out, request.id_json);
        return out;
    }

    std::string unsubscribe(Client& client, const api::PushRequest& request) {
        auto it = subs_.find(request.subscription);
        if (it == subs_.end() || it->second->client != &client) {
            return jsonrpc::error_response(request.id_json, jsonrpc::kInvalidParams, "unknown subscription");
        }
        auto& mine = by_client_[&client];
        std::erase(mine, request.subscription);
        if (mine.empty()) {
            by_client_.erase(&client);
            count(&api::PushCounters::connections, -1);
        }
        drop(it);
        std::string out(jsonrpc::kResultHead);
        out += "true";
        jsonrpc::append_response_id(out, request.id_json);
        return out;
    }

    void forget(Client& client) {
        auto mine = by_client_.find(&client);
        if (mine == by_client_.end()) return;
        for (const auto& id : mine->second) {
            auto it = subs_.find(id);
            if (it != subs_.end()) drop(it);
        }
        by_client_.erase(mine);
        count(&api::PushCounters::connections, -1);
    }

    // A subscription's statement answered.
    void subscription_answered(Subscription& sub, PgOutcome outcome, PGresult* rows) {
        sub.op_running = false;
        if (outcome != PgOutcome::Rows) {
            sub.state = Subscription::State::Stalled;
            schedule_retry();
            return;
        }
        if (!sub.has_start) {
            // After every event of the highest block stored.
            if (PQntuples(rows) > 0) sub.last = Key{std::stoll(PQgetvalue(rows, 0, 0)), kAfterBlock, ""};
            sub.has_start = true;
            go_live(sub);
            return;
        }
        const int n = PQntuples(rows);
        for (int row = 0; row < n; ++row) deliver(sub, api::read_pushed_event(rows, row));
        if (n >= kCatchUpRows) {
            start(sub);  // the next page
        } else {
            go_live(sub);
        }
    }

    void fetched(PgOutcome outcome, PGresult* rows) {
        fetching_ = false;
        if (outcome != PgOutcome::Rows) {
            fetch_failed_ = true;
            schedule_retry();
            return;
        }
        // The live subscriptions this fetch was for: live when it was
        // requested (its accounts were those of these), and still.
        const auto included = [this](const Subscription* sub) { return sub->live_from <= fetch_seq_; };
        const int n = PQntuples(rows);
        if (fetch_notified_us_ != 0) {
            const std::uint64_t now = metrics::monotonic_us();
            live_delay_us_ = now > fetch_notified_us_ ? now - fetch_notified_us_ : 1;
        }
        Key last_row;
        for (int row = 0; row < n; ++row) {
            api::PushedEvent event = api::read_pushed_event(rows, row);
            last_row = key_of(event);
            auto it = live_by_account_.find(event.account);
            if (it == live_by_account_.end()) continue;
            for (Subscription* sub : it->second) {
                if (included(sub)) deliver(*sub, event);
            }
        }
        live_delay_us_ = 0;
        // A full answer: the rest of the notification's rows come with the next.
        if (n >= kFetchRows && notified_us_ == 0) notified_us_ = fetch_notified_us_;
        // Every row of their accounts from the fetch's start up to the last
        // one was in this answer: the next fetch starts there (a quiet
        // account does not hold every fetch back to its last event).
        if (n > 0) {
            for (Subscription* sub : live_) {
                if (included(sub)) sub->last = std::max(sub->last, last_row);
            }
        }
        if (n >= kFetchRows) again_ = true;
        if (again_) request_fetch();
    }

    void listened(PgOutcome outcome) {
        listen_running_ = false;
        if (outcome != PgOutcome::Rows) {
            schedule_retry();
            return;
        }
        listening_ = true;
        retry_delay_ = 0;
        request_fetch();  // what was committed while nobody listened
    }

    void notified(const char* payload) {
        // {"last": the last block committed, ...} (migration 0025).
        if (auto parsed = json::parse(payload)) {
            if (auto last = json::to_int64(json_object_get(parsed->get(), "last"))) head_ = std::max(head_, *last);
        }
        if (notified_us_ == 0) notified_us_ = metrics::monotonic_us();
        request_fetch();
    }

    void lost() {
        if (!listening_) return;
        listening_ = false;
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0, "wallet_history: push listener's database connection lost");
        schedule_retry();
    }

    void retry() {
        ensure_listening();
        for (auto& [id, sub] : subs_) {
            if (sub->state == Subscription::State::Stalled) start(*sub);
        }
        if (fetch_failed_) {
            fetch_failed_ = false;
            request_fetch();
        }
    }

private:
    // The subscription's next statement: where it starts, or a page of what
    // was stored after its position.
    void start(Subscription& sub) {
        sub.state = sub.has_start ? Subscription::State::CatchingUp : Subscription::State::Starting;
        sub.op.retried = false;
        if (!sub.has_start) {
            sub.op.statement = "wh_push_head";
            sub.op.params = {};
        } else {
            sub.op.statement = "wh_push";
            sub.op.params = {pg::text_array_literal(sub.accounts), std::to_string(sub.last.block_num),
                             std::to_string(sub.last.position), sub.last.account, std::to_string(kCatchUpRows)};
        }
        sub.op_running = true;
        api_.pool->submit(&sub.op);
    }

    // Caught up: the next fetch of the worker includes it (and runs now,
    // for what was committed since its last page was read).
    void go_live(Subscription& sub) {
        sub.state = Subscription::State::Live;
        sub.live_from = fetch_seq_ + 1;
        sub.live_index = live_.size();
        live_.push_back(&sub);
        for (const auto& account : sub.accounts) live_by_account_[account].push_back(&sub);
        live_changed_ = true;
        request_fetch();
    }

    void deliver(Subscription& sub, const api::PushedEvent& event) {
        const Key key = key_of(event);
        if (key <= sub.last) return;  // delivered already: never twice
        sub.last = key;
        if (!sub.matches(event)) return;
        std::string out = R"({"jsonrpc":"2.0","method":"wallet_history.event","params":{"subscription":)";
        json::append_quoted(out, sub.id);
        out += ",\"event\":";
        out += event.json;
        out += ",\"cursor\":";
        json::append_quoted(out, api_.cursors->encode(event.cursor, event.account, sub.fingerprint));
        out += "}}";
        sub.client->send_text(std::move(out));
        if (api_.counters != nullptr) {
            metrics::add(api_.counters->notifications);
            if (live_delay_us_ != 0) api_.counters->delay.observe(live_delay_us_);
        }
    }

    // One statement for every live subscription: the rows of their accounts
    // above the lowest position among them.
    void request_fetch() {
        if (fetching_) {
            again_ = true;
            return;
        }
        again_ = false;
        const Key* after = nullptr;
        for (const Subscription* sub : live_) {
            if (after == nullptr || sub->last < *after) after = &sub->last;
        }
        if (after == nullptr) return;
        const bool by_range = head_ >= after->block_num && head_ - after->block_num <= kRangeBlocks;
        if (live_changed_) {
            // The accounts of the live subscriptions, as the statement's text[]
            // (built again only when a subscription joined or left).
            std::vector<std::string> accounts;
            accounts.reserve(live_by_account_.size());
            for (const auto& [account, subs] : live_by_account_) accounts.push_back(account);
            std::sort(accounts.begin(), accounts.end());
            live_accounts_ = pg::text_array_literal(accounts);
            live_changed_ = false;
        }
        ++fetch_seq_;
        fetch_notified_us_ = notified_us_;
        notified_us_ = 0;
        fetch_op_.retried = false;
        fetch_op_.statement = by_range ? "wh_push_range" : "wh_push";
        fetch_op_.params = {live_accounts_, std::to_string(after->block_num), std::to_string(after->position),
                            after->account, std::to_string(kFetchRows)};
        if (by_range) fetch_op_.params.push_back(std::to_string(head_));
        fetching_ = true;
        api_.pool->submit(&fetch_op_);
    }

    void ensure_listening() {
        if (listening_ || listen_running_) return;
        listen_running_ = true;
        listen_op_.retried = false;
        listener_->submit(&listen_op_);
    }

    void schedule_retry() {
        if (retry_.timer_set) return;
        retry_delay_ = retry_delay_ == 0 ? kRetryMinMs : std::min(retry_delay_ * 2, kRetryMaxMs);
        ngx_add_timer(&retry_, retry_delay_);
    }

    void drop(std::map<std::string, std::unique_ptr<Subscription>>::iterator it) {
        Subscription& sub = *it->second;
        if (sub.op_running) api_.pool->cancel(&sub.op);
        if (sub.state == Subscription::State::Live) {
            live_[sub.live_index] = live_.back();
            live_[sub.live_index]->live_index = sub.live_index;
            live_.pop_back();
            for (const auto& account : sub.accounts) {
                auto found = live_by_account_.find(account);
                if (found == live_by_account_.end()) continue;  // named twice
                std::erase(found->second, &sub);
                if (found->second.empty()) live_by_account_.erase(found);
            }
            live_changed_ = true;
        }
        subs_.erase(it);
        count(&api::PushCounters::subscribers, -1);
    }

    void count(metrics::Counter api::PushCounters::*gauge, std::int64_t delta) {
        if (api_.counters != nullptr) api::PushCounters::change(api_.counters->*gauge, delta);
    }

    ApiContext api_;
    std::unique_ptr<ngx::PgPool> listener_;
    PgOp listen_op_;
    bool listening_ = false;
    bool listen_running_ = false;
    PgOp fetch_op_;
    bool fetching_ = false;
    bool again_ = false;         // news came while a fetch ran
    bool fetch_failed_ = false;  // the last fetch failed: the retry runs it again
    // The live subscriptions, by account too, kept as they join and leave
    // (a fetch costs its rows, not a pass over every subscription's accounts).
    std::vector<Subscription*> live_;
    std::unordered_map<std::string, std::vector<Subscription*>> live_by_account_;
    bool live_changed_ = false;
    std::string live_accounts_;  // their accounts' text[] literal
    std::uint64_t fetch_seq_ = 0;  // fetches requested
    std::map<std::string, std::unique_ptr<Subscription>> subs_;
    std::unordered_map<Client*, std::vector<std::string>> by_client_;
    std::uint64_t next_id_ = 1;
    ngx_event_t retry_{};
    ngx_msec_t retry_delay_ = 0;
    // Metrics: when the oldest notification no fetch has started for yet
    // arrived, that of the running fetch's, and its delay while its rows
    // are handed out (0: none, e.g. a fetch for a subscription going live).
    std::uint64_t notified_us_ = 0;
    std::uint64_t fetch_notified_us_ = 0;
    std::uint64_t live_delay_us_ = 0;
    std::int64_t head_ = 0;  // the highest block notified
};

std::unique_ptr<Hub> worker_hub;

void subscription_done(PgOp* op, PgOutcome outcome, PGresult* rows) {
    auto* sub = static_cast<Subscription*>(op->data);
    sub->hub->subscription_answered(*sub, outcome, rows);
}
void fetch_done(PgOp* op, PgOutcome outcome, PGresult* rows) { static_cast<Hub*>(op->data)->fetched(outcome, rows); }
void listen_done(PgOp* op, PgOutcome outcome, PGresult*) { static_cast<Hub*>(op->data)->listened(outcome); }
void retry_timer(ngx_event_t* ev) { static_cast<Hub*>(ev->data)->retry(); }
void on_notified(void* data, const char* payload) { static_cast<Hub*>(data)->notified(payload); }
void on_lost(void* data) { static_cast<Hub*>(data)->lost(); }

}  // namespace

std::optional<std::string> handle(Client& client, std::string_view message, const Limits& limits) {
    if (!api::names_push_method(message)) return std::nullopt;
    const auto api = api_context();
    if (!api) {
        // Parsed without a secret: only to know it is a push call.
        static const CursorCodec no_cursors{"push needs the wallet_history API"};
        auto request = api::parse_push_request(message, api::RequestLimits{}, limits.accounts, no_cursors);
        if (!request) return std::nullopt;
        return jsonrpc::error_response(request->id_json, jsonrpc::kMethodNotFound,
                                       "push needs the wallet_history API in this nginx");
    }
    auto request = api::parse_push_request(message, *api->limits, limits.accounts, *api->cursors);
    if (!request) return std::nullopt;
    if (request->error) return jsonrpc::error_response(request->id_json, request->error->code, request->error->message);
    if (!worker_hub || !worker_hub->serves(*api)) worker_hub = std::make_unique<Hub>(*api);
    if (request->kind == api::PushRequest::Kind::Subscribe) return worker_hub->subscribe(client, *request, limits);
    return worker_hub->unsubscribe(client, *request);
}

void forget(Client& client) {
    if (worker_hub) worker_hub->forget(client);
}

void shutdown() { worker_hub.reset(); }

void dropped(const Client& client, api::PushDrop reason) {
    if (worker_hub && worker_hub->holds(client) && worker_hub->counters() != nullptr) {
        metrics::add(worker_hub->counters()->dropped[static_cast<std::size_t>(reason)]);
    }
}

}  // namespace wallet::push
