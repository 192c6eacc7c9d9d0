// Push subscriptions of one worker (see the header).
#include "ngx_http_wallet_history_push.hpp"

#include <algorithm>
#include <deque>
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
#include "wallet/cursor.hpp"
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
// account whatever the distance; by block, every event of the range, of
// every account (a fetch a block behind: a block's events): 100 blocks (5
// minutes of Hive) are some 2,000-20,000 rows, less than the probes of a
// few thousand accounts, and a hub that fell behind catches up account by
// account.
constexpr std::int64_t kRangeBlocks = 100;
// After a failed statement or a lost listener, the next try waits this
// long, doubling up to the maximum.
constexpr ngx_msec_t kRetryMinMs = 100;
constexpr ngx_msec_t kRetryMaxMs = 5000;

// A position above every event of its block (block_seq * 100 + role is below it).
constexpr std::int64_t kAfterBlock = 2147483647;
// The notifications a subscription remembers for a retraction (those of
// blocks not yet irreversible); the oldest are forgotten past this.
constexpr std::size_t kMaxRetractable = 10000;

// A row's place in the order of delivery: the store's keyset, then the
// account's name (rows of one op for several accounts share the keyset).
struct Key {
    std::int64_t block_num = 0;
    std::int64_t position = 0;  // block_seq * 100 + role code
    std::string account;
    auto operator<=>(const Key&) const = default;
};


Key key_of(const api::PushedEvent& e) { return Key{e.block_num, e.position, e.account}; }
// After every event of `block`.
Key after_block(std::int64_t block) { return Key{block, kAfterBlock, ""}; }

// (block_num, position, account) of `e` is above `key`.
bool above(const api::PushedEvent& e, const Key& key) {
    if (e.block_num != key.block_num) return e.block_num > key.block_num;
    if (e.position != key.position) return e.position > key.position;
    return e.account > key.account;
}

// A notification sent, as a retraction names it (its event's key and its
// cursor are written only if it is retracted).
struct Sent {
    Key key;
    CursorPosition position;  // the event's, as its cursor holds it
};

// The start of every event notification; the subscription's quoted id follows.
constexpr std::string_view kEventHead = R"({"jsonrpc":"2.0","method":"wallet_history.event","params":{"subscription":)";

// The rest of an event's notification after the subscription's id (the
// event and its cursor): the same for every subscription of one filter.
struct Rendered {
    std::string fingerprint;
    std::string tail;
};

class Hub;

// A place under the API's in-flight cap, held while a subscription reads
// where it starts and its catch-up (the statements a request would run).
class InflightPlace {
public:
    InflightPlace() = default;
    explicit InflightPlace(bool held) : held_(held) {}
    InflightPlace(InflightPlace&& other) noexcept : held_(std::exchange(other.held_, false)) {}
    InflightPlace& operator=(InflightPlace&& other) noexcept {
        release();
        held_ = std::exchange(other.held_, false);
        return *this;
    }
    ~InflightPlace() { release(); }
    void release() {
        if (held_) leave_inflight();
        held_ = false;
    }

private:
    bool held_ = false;
};

// Subscription ids of this worker (a hub ends with its last subscription).
std::uint64_t next_subscription_id = 1;

struct Subscription {
    // Paced: its catch-up waits for the client to read what was queued.
    enum class State { Starting, CatchingUp, Live, Stalled, Paced };

    Hub* hub = nullptr;
    std::string id;
    std::string quoted_id;  // as notifications print it
    Client* client = nullptr;
    std::vector<std::string> accounts;  // sorted
    api::PageQuery filter;
    std::string fingerprint;  // of get_wallet_history with this filter: the cursors' binding
    Key last;                 // the last event delivered (or the start)
    bool has_start = false;   // `last` is known (a cursor, or the head was read)
    bool irreversible_only = false;
    // Notifications of blocks not yet irreversible, oldest first (a fork may
    // retract them).
    std::deque<Sent> retractable;
    State state = State::Starting;
    PgOp op;  // its head read or catch-up page
    bool op_running = false;
    InflightPlace place;  // until it is live
    std::size_t pace_bytes = 0;  // a catch-up waits with more than this queued to the client
    // Live: the first fetch that includes it (Hub::fetch_seq_). Settled:
    // a fetch including it ended at or above its position, and every fetch
    // since includes it: its position is at least the hub's floor (of its
    // kind), which the hub moves for all settled ones at once.
    std::uint64_t live_from = 0;
    bool settled = false;

    bool matches(const api::PushedEvent& e) const {
        if (!filter.op_types.empty()) return std::binary_search(filter.op_types.begin(), filter.op_types.end(), e.op_type);
        return filter.all_types || !e.wide;
    }
};

void subscription_done(PgOp* op, PgOutcome outcome, PGresult* rows);
void fetch_done(PgOp* op, PgOutcome outcome, PGresult* rows);
void listen_done(PgOp* op, PgOutcome outcome, PGresult* rows);
void retry_timer(ngx_event_t* ev);
void on_notified(void* data, std::string_view payload);
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
    bool empty() const { return subs_.empty(); }
    bool holds(const Client& client) const { return by_client_.contains(const_cast<Client*>(&client)); }
    api::PushCounters* counters() const { return api_.counters; }

    std::string subscribe(Client& client, api::PushRequest& request, const Limits& limits, InflightPlace place) {
        auto& mine = by_client_[&client];
        if (mine.size() >= limits.subscriptions) {
            return jsonrpc::error_response(request.id_json, jsonrpc::kInvalidParams,
                                           "too many subscriptions on this connection (at most " +
                                               std::to_string(limits.subscriptions) + ")");
        }
        auto sub = std::make_unique<Subscription>();
        sub->hub = this;
        sub->id = std::to_string(next_subscription_id++);
        json::append_quoted(sub->quoted_id, sub->id);
        sub->client = &client;
        sub->accounts = std::move(request.accounts);
        sub->filter = std::move(request.filter);
        sub->fingerprint = api::query_fingerprint(api::Method::GetWalletHistory, sub->filter);
        sub->irreversible_only = request.irreversible_only;
        sub->place = std::move(place);
        sub->pace_bytes = limits.max_output / 2;
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

    // A catch-up waited for the client to read: it goes on.
    void drained(Client& client) {
        auto mine = by_client_.find(&client);
        if (mine == by_client_.end()) return;
        for (const auto& id : mine->second) {
            auto it = subs_.find(id);
            if (it != subs_.end() && it->second->state == Subscription::State::Paced) start(*it->second);
        }
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
        bool at_limit = false;  // irreversible_only: a row above the irreversible block
        for (int row = 0; row < n && !at_limit; ++row) {
            api::PushedEvent event = api::read_pushed_event(rows, row);
            if (beyond_limit(sub, event, irreversible_)) {
                at_limit = true;
            } else if (sub.client->queued_bytes() > sub.pace_bytes) {
                pace(sub);  // this row and the page's others are read again after the wait
                return;
            } else {
                rendered_used_ = 0;
                deliver(sub, event);
            }
        }
        if (n >= kCatchUpRows && !at_limit) {
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
        Key last_row;
        for (int row = 0; row < n; ++row) {
            // wh_push_range's rows of accounts nobody here subscribed to are
            // skipped unread (but the last, where the next fetch starts).
            auto it = live_by_account_.find(PQgetvalue(rows, row, api::push_column::kAccount));
            if (it == live_by_account_.end() && row != n - 1) continue;
            api::PushedEvent event = api::read_pushed_event(rows, row);
            if (row == n - 1) last_row = key_of(event);
            if (it == live_by_account_.end()) continue;
            if (fetch_notified_us_ != 0) {
                const std::uint64_t now = metrics::realtime_us();
                live_delay_us_ = now > fetch_notified_us_ ? now - fetch_notified_us_ : 1;
            }
            rendered_used_ = 0;  // this row's notifications are rendered once per filter
            for (Subscription* sub : it->second) {
                if (included(sub) && !beyond_limit(*sub, event, fetch_irreversible_)) deliver(*sub, event);
            }
        }
        live_delay_us_ = 0;
        // A full answer: the rest of the notification's rows come with the next.
        if (n >= kFetchRows && notified_us_ == 0) notified_us_ = fetch_notified_us_;
        // Every row of their accounts from the fetch's start up to the last
        // one was in this answer: the next fetch starts there (a quiet
        // account does not hold every fetch back to its last event), or,
        // irreversible_only, at most after the irreversible block. The
        // settled subscriptions move with the floors; those that joined
        // since the last fetch settle once they reach theirs.
        if (n > 0) {
            const Key trusted = std::min(last_row, after_block(fetch_irreversible_));
            floor_ = std::max(floor_, last_row);
            irreversible_floor_ = std::max(irreversible_floor_, trusted);
            std::erase_if(joining_, [&](Subscription* sub) {
                if (!included(sub)) return false;
                sub->last = std::max(sub->last, sub->irreversible_only ? trusted : last_row);
                if (sub->last < floor_of(*sub)) return false;
                sub->settled = true;
                ++(sub->irreversible_only ? settled_irreversible_ : settled_);
                return true;
            });
        }
        if (n >= kFetchRows) again_ = true;
        if (again_) request_fetch();
    }

    void listened(PgOutcome outcome, PGresult* rows) {
        listen_running_ = false;
        if (outcome != PgOutcome::Rows) {
            schedule_retry();
            return;
        }
        listening_ = true;
        if (PQntuples(rows) > 0 && PQgetisnull(rows, 0, 1) == 0) move_irreversible(std::stoll(PQgetvalue(rows, 0, 1)));
        retry_delay_ = 0;
        request_fetch();  // what was committed while nobody listened
    }

    // A writer committed (migrations 0025, 0027): {"first", "last",
    // "rewound_above", "irreversible"}, or {"irreversible"} alone when the
    // node's last irreversible block moved.
    void notified(std::string_view payload) {
        std::uint64_t at = metrics::realtime_us();
        auto parsed = json::parse(payload);
        if (parsed) {
            // The writer's clock at its NOTIFY, its transaction's last
            // statement (migration 0028; an older writer's payload has none:
            // its arrival here).
            if (auto committed = json::to_int64(json_object_get(parsed->get(), "committed_us")); committed && *committed > 0) {
                at = std::min(at, static_cast<std::uint64_t>(*committed));
            }
            if (auto last = json::to_int64(json_object_get(parsed->get(), "last"))) head_ = std::max(head_, *last);
            const json_t* rewound = json_object_get(parsed.value().get(), "rewound_above");
            if (json_is_integer(rewound)) rewind(json_integer_value(rewound));
            const json_t* irreversible = json_object_get(parsed.value().get(), "irreversible");
            if (json_is_integer(irreversible)) move_irreversible(json_integer_value(irreversible));
        }
        notified_us_ = notified_us_ == 0 ? at : std::min(notified_us_, at);
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

    // A catch-up larger than the client's output limit goes on at the pace
    // the client reads (instead of closing it as a slow consumer).
    void pace(Subscription& sub) {
        sub.state = Subscription::State::Paced;
        sub.client->notify_when_drained();
    }

    // Caught up: the next fetch of the worker includes it (and runs now,
    // for what was committed since its last page was read).
    void go_live(Subscription& sub) {
        sub.state = Subscription::State::Live;
        sub.place.release();
        sub.live_from = fetch_seq_ + 1;
        joining_.push_back(&sub);
        for (const auto& account : sub.accounts) live_by_account_[account].push_back(&sub);
        live_changed_ = true;
        request_fetch();
    }

    // The floor of a settled subscription's kind (Subscription::settled).
    const Key& floor_of(const Subscription& sub) const { return sub.irreversible_only ? irreversible_floor_ : floor_; }

    // Everything up to here was delivered to the subscription (or skipped).
    const Key& position(const Subscription& sub) const {
        if (!sub.settled) return sub.last;
        const Key& floor = floor_of(sub);
        return sub.last < floor ? floor : sub.last;
    }

    void deliver(Subscription& sub, const api::PushedEvent& event) {
        if (!above(event, position(sub))) return;  // delivered already: never twice
        sub.last.block_num = event.block_num;
        sub.last.position = event.position;
        sub.last.account = event.account;
        if (!sub.matches(event)) return;
        const std::string_view parts[] = {kEventHead, sub.quoted_id, rendered(sub, event)};
        sub.client->send_text(parts);
        remember(sub, event);
        if (api_.counters != nullptr) {
            metrics::add(api_.counters->notifications);
            if (live_delay_us_ != 0) api_.counters->delay.observe(live_delay_us_);
        }
    }

    // irreversible_only: the event's block is above `irreversible`.
    bool beyond_limit(const Subscription& sub, const api::PushedEvent& event, std::int64_t irreversible) const {
        return sub.irreversible_only && event.block_num > irreversible;
    }

    // The notification's bytes after the subscription's id, rendered once
    // per row and filter (fetched() starts each row with none).
    std::string_view rendered(const Subscription& sub, const api::PushedEvent& event) {
        for (std::size_t i = 0; i < rendered_used_; ++i) {
            if (rendered_[i].fingerprint == sub.fingerprint) return rendered_[i].tail;
        }
        if (rendered_used_ == rendered_.size()) rendered_.emplace_back();
        Rendered& r = rendered_[rendered_used_++];
        r.fingerprint = sub.fingerprint;
        r.tail = ",\"event\":";
        r.tail += event.json;
        r.tail += ",\"cursor\":";
        json::append_quoted(r.tail, api_.cursors->encode(event.cursor, event.account, sub.fingerprint));
        r.tail += "}}";
        return r.tail;
    }

    // A notification a fork may retract (of a block not yet irreversible).
    void remember(Subscription& sub, const api::PushedEvent& event) {
        if (sub.irreversible_only || event.block_num <= irreversible_) return;
        forget_irreversible(sub);
        sub.retractable.push_back(Sent{key_of(event), event.cursor});
        if (sub.retractable.size() > kMaxRetractable) sub.retractable.pop_front();
    }

    // The notifications at or below the irreversible block are never
    // retracted (forgotten when the subscription remembers one more, or
    // before a rewind: not on every move of the block).
    void forget_irreversible(Subscription& sub) const {
        auto& sent = sub.retractable;
        while (!sent.empty() && sent.front().key.block_num <= irreversible_) sent.pop_front();
    }

    // The store's irreversible block (migration 0027) moved: the
    // irreversible_only subscriptions may deliver up to it.
    void move_irreversible(std::int64_t block) { irreversible_ = std::max(irreversible_, block); }

    // A fork removed the blocks above `block`: every notification of them is
    // retracted, newest first, each with the cursor to resume from (the one
    // of the notification before it, or a cursor after `block`), and the
    // subscription's position falls back to `block`, so that the blocks
    // stored in their place are delivered once. Statements begun before the
    // rewind may hold removed rows: they are dropped and run again.
    void rewind(std::int64_t block) {
        const Key fallback = after_block(block);
        for (auto& [id, sub] : subs_) forget_irreversible(*sub);
        irreversible_ = std::min(irreversible_, block);  // a node that went back on its word: below it is all we know
        floor_ = std::min(floor_, fallback);
        irreversible_floor_ = std::min(irreversible_floor_, fallback);
        for (auto& [id, sub] : subs_) {
            retract_above(*sub, block);
            if (sub->has_start && sub->last > fallback) sub->last = fallback;
            if (sub->op_running) {
                api_.pool->cancel(&sub->op);
                sub->op_running = false;
                start(*sub);
            }
        }
        if (fetching_) {
            api_.pool->cancel(&fetch_op_);
            fetching_ = false;
            again_ = true;
        }
    }

    void retract_above(Subscription& sub, std::int64_t block) {
        auto& sent = sub.retractable;
        while (!sent.empty() && sent.back().key.block_num > block) {
            // The client's position after it: the notification before it
            // (retracted next, or kept), else after the fork's block.
            const std::string cursor = sent.size() >= 2 ? cursor_of(sub, sent[sent.size() - 2]) : cursor_after(sub, block);
            const Sent& gone = sent.back();
            std::string out = R"({"jsonrpc":"2.0","method":"wallet_history.retract","params":{"subscription":)";
            out += sub.quoted_id;
            out += ",\"event\":{\"block_num\":";
            out += std::to_string(gone.position.block_num);
            out += ",\"block_seq\":";
            out += std::to_string(gone.position.block_seq);
            out += ",\"role\":";
            json::append_quoted(out, gone.position.role);
            out += ",\"account\":";
            json::append_quoted(out, gone.key.account);
            out += "},\"cursor\":";
            json::append_quoted(out, cursor);
            out += "}}";
            sub.client->send_text(out);
            if (api_.counters != nullptr) metrics::add(api_.counters->retractions);
            sent.pop_back();
        }
    }

    // The cursor of a notification sent.
    std::string cursor_of(const Subscription& sub, const Sent& sent) const {
        return api_.cursors->encode(sent.position, sent.key.account, sub.fingerprint);
    }

    // A cursor of the subscription for the position after every event of `block`.
    std::string cursor_after(const Subscription& sub, std::int64_t block) const {
        CursorPosition position;
        position.block_num = block;
        position.block_seq = static_cast<std::int32_t>(kAfterBlock / 100 - 1);
        return api_.cursors->encode(position, sub.accounts.front(), sub.fingerprint);
    }

    // One statement for every live subscription: the rows of their accounts
    // above the lowest position among them.
    void request_fetch() {
        if (fetching_) {
            again_ = true;
            return;
        }
        again_ = false;
        // The lowest position of a live subscription: a floor (settled
        // ones), or one of those that joined since the last fetch;
        // irreversible_only and at the irreversible block: nothing to fetch yet.
        const Key trusted = after_block(irreversible_);
        const Key* after = nullptr;
        const auto lowest = [&after](const Key& key) {
            if (after == nullptr || key < *after) after = &key;
        };
        if (settled_ > 0) lowest(floor_);
        if (settled_irreversible_ > 0 && irreversible_floor_ < trusted) lowest(irreversible_floor_);
        for (const Subscription* sub : joining_) {
            if (!(sub->irreversible_only && sub->last >= trusted)) lowest(sub->last);
        }
        if (after == nullptr) return;
        fetch_irreversible_ = irreversible_;
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
        if (by_range) {
            fetch_op_.params = {std::to_string(after->block_num), std::to_string(after->position), after->account,
                                std::to_string(kFetchRows), std::to_string(head_)};
        } else {
            fetch_op_.params = {live_accounts_, std::to_string(after->block_num), std::to_string(after->position),
                                after->account, std::to_string(kFetchRows)};
        }
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
            if (sub.settled) {
                --(sub.irreversible_only ? settled_irreversible_ : settled_);
            } else {
                std::erase(joining_, &sub);
            }
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
    // The live subscriptions by account, kept as they join and leave; those
    // not settled yet, and how many are (Subscription::settled): a fetch
    // costs its rows and the subscriptions of their accounts, not a pass
    // over every subscription.
    std::unordered_map<std::string, std::vector<Subscription*>> live_by_account_;
    std::vector<Subscription*> joining_;
    std::size_t settled_ = 0;
    std::size_t settled_irreversible_ = 0;
    // Where every settled subscription is at least (irreversible_only ones:
    // the second): the last row of the fetches so far.
    Key floor_;
    Key irreversible_floor_;
    // The rendered notifications of the row being handed out, the first
    // rendered_used_ (the strings' buffers are kept for the next rows).
    std::vector<Rendered> rendered_;
    std::size_t rendered_used_ = 0;
    bool live_changed_ = false;
    std::string live_accounts_;  // their accounts' text[] literal
    std::uint64_t fetch_seq_ = 0;  // fetches requested
    std::map<std::string, std::unique_ptr<Subscription>> subs_;
    std::unordered_map<Client*, std::vector<std::string>> by_client_;
    ngx_event_t retry_{};
    ngx_msec_t retry_delay_ = 0;
    std::int64_t irreversible_ = 0;  // the store's irreversible block (migration 0027)
    // irreversible_ when the running fetch was requested: its rows go to
    // irreversible_only subscriptions up to that block only. The block may
    // move on while the fetch runs, but the fetch started above where those
    // subscriptions were then (a subscription at that block was left out
    // of its start): the rows between were not read for them (the next
    // fetch, which the move requests, reads them).
    std::int64_t fetch_irreversible_ = 0;
    // Metrics: when the writer committed the oldest news no fetch has
    // started for yet (realtime_us: its clock, or the arrival of a payload
    // without it), that of the running fetch's, and its delay while a row
    // is handed out (0: none, e.g. a fetch for a subscription going live).
    std::uint64_t notified_us_ = 0;
    std::uint64_t fetch_notified_us_ = 0;
    std::uint64_t live_delay_us_ = 0;
    std::int64_t head_ = 0;  // the highest block notified
};

std::unique_ptr<Hub> worker_hub;

// The worker's subscriptions, on the API's pool of this cycle.
Hub& hub_for(const ApiContext& api) {
    if (!worker_hub || !worker_hub->serves(api)) worker_hub = std::make_unique<Hub>(api);
    return *worker_hub;
}

// The worker's last subscription ended: its listener's connection closes
// (a new subscription opens it again).
void close_if_unused() {
    if (worker_hub && worker_hub->empty()) worker_hub.reset();
}

void subscription_done(PgOp* op, PgOutcome outcome, PGresult* rows) {
    auto* sub = static_cast<Subscription*>(op->data);
    sub->hub->subscription_answered(*sub, outcome, rows);
}
void fetch_done(PgOp* op, PgOutcome outcome, PGresult* rows) { static_cast<Hub*>(op->data)->fetched(outcome, rows); }
void listen_done(PgOp* op, PgOutcome outcome, PGresult* rows) { static_cast<Hub*>(op->data)->listened(outcome, rows); }
void retry_timer(ngx_event_t* ev) { static_cast<Hub*>(ev->data)->retry(); }
void on_notified(void* data, std::string_view payload) { static_cast<Hub*>(data)->notified(payload); }
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
    if (request->kind == api::PushRequest::Kind::Subscribe) {
        // The HTTP API's limits, for the same client (a valid subscribe
        // costs statements as a request does).
        const Admission admission = admit(client.address());
        if (admission == Admission::RateLimited) {
            return jsonrpc::error_response(request->id_json, jsonrpc::kInvalidRequest, "rate limit exceeded");
        }
        if (admission == Admission::Busy) return jsonrpc::error_response(request->id_json, jsonrpc::kInternalError, "server busy");
        InflightPlace place(admission == Admission::Counted);
        return hub_for(*api).subscribe(client, *request, limits, std::move(place));
    }
    std::string answer = hub_for(*api).unsubscribe(client, *request);
    close_if_unused();
    return answer;
}

void drained(Client& client) {
    if (worker_hub) worker_hub->drained(client);
}

void forget(Client& client) {
    if (!worker_hub) return;
    worker_hub->forget(client);
    close_if_unused();
}

void shutdown() { worker_hub.reset(); }

void dropped(const Client& client, api::PushDrop reason) {
    if (worker_hub && worker_hub->holds(client) && worker_hub->counters() != nullptr) {
        metrics::add(worker_hub->counters()->dropped[static_cast<std::size_t>(reason)]);
    }
}

}  // namespace wallet::push
