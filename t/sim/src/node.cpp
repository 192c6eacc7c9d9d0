#include "node.hpp"

#include "ledger.hpp"

#include "rpc_params.hpp"
#include "splitmix.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <set>
#include <thread>

namespace sim {

namespace {

// Global properties of current mainnet (api.hive.blog, 2026) and of a Steem-era
// node (steemd 0.19, 2017): the fields besides head, time and irreversibility.
constexpr std::string_view kCurrentGlobalProperties =
    R"({"id":0,"head_block_number":0,"head_block_id":"","time":"","current_witness":"","total_pow":514415,)"
    R"("num_pow_witnesses":172,"virtual_supply":{"amount":"1171533817734","precision":3,"nai":"@@000000021"},)"
    R"("current_supply":{"amount":"589934154444","precision":3,"nai":"@@000000021"},)"
    R"("init_hbd_supply":{"amount":"0","precision":3,"nai":"@@000000013"},)"
    R"("current_hbd_supply":{"amount":"31987981481","precision":3,"nai":"@@000000013"},)"
    R"("total_vesting_fund_hive":{"amount":"216768083449","precision":3,"nai":"@@000000021"},)"
    R"("total_vesting_shares":{"amount":"348407826810874088","precision":6,"nai":"@@000000037"},)"
    R"("pending_rewarded_vesting_shares":{"amount":"1415170896438490","precision":6,"nai":"@@000000037"},)"
    R"("pending_rewarded_vesting_hive":{"amount":"801671732","precision":3,"nai":"@@000000021"},)"
    R"("hbd_interest_rate":1000,"hbd_print_rate":0,"maximum_block_size":65536,"current_aslot":0,)"
    R"("recent_slots_filled":"340282366920938463463374607431768211455","participation_count":128,)"
    R"("last_irreversible_block_num":0,"vote_power_reserve_rate":10,"delegation_return_period":432000,)"
    R"("reverse_auction_seconds":0,"available_account_subsidies":12572957,"hbd_stop_percent":2000,)"
    R"("hbd_start_percent":2000,"next_maintenance_time":"2026-10-10T18:38:09","last_budget_time":"2026-10-10T17:38:09",)"
    R"("next_daily_maintenance_time":"2026-10-10T19:31:33","content_reward_percent":6500,"vesting_reward_percent":1500,)"
    R"("proposal_fund_percent":1000,"dhf_interval_ledger":{"amount":"20181","precision":3,"nai":"@@000000013"},)"
    R"("downvote_pool_percent":2500,"current_remove_threshold":200,"early_voting_seconds":86400,)"
    R"("mid_voting_seconds":172800,"max_consecutive_recurrent_transfer_failures":10,)"
    R"("max_recurrent_transfer_end_date":730,"min_recurrent_transfers_recurrence":24,"max_open_recurrent_transfers":255})";

constexpr std::string_view kLegacyGlobalProperties =
    R"({"id":0,"head_block_number":0,"head_block_id":"","time":"","current_witness":"","total_pow":514415,)"
    R"("num_pow_witnesses":172,"virtual_supply":"262804509.397 STEEM","current_supply":"259112749.537 STEEM",)"
    R"("confidential_supply":"0.000 STEEM","current_sbd_supply":"3326275.634 SBD","confidential_sbd_supply":"0.000 SBD",)"
    R"("total_vesting_fund_steem":"190586301.870 STEEM","total_vesting_shares":"391632427652.353443 VESTS",)"
    R"("total_reward_fund_steem":"0.000 STEEM","total_reward_shares2":"0",)"
    R"("pending_rewarded_vesting_shares":"405574040.889819 VESTS","pending_rewarded_vesting_steem":"196688.011 STEEM",)"
    R"("sbd_interest_rate":0,"sbd_print_rate":10000,"maximum_block_size":65536,"current_aslot":0,)"
    R"("recent_slots_filled":"340282366920938463463374607431768211455","participation_count":128,)"
    R"("last_irreversible_block_num":0,"vote_power_reserve_rate":10})";

constexpr std::string_view kZeroId = "0000000000000000000000000000000000000000";
constexpr std::uint64_t kNoStart = ~std::uint64_t{0};

// ref_block_prefix: the second 32-bit word of the block id, little endian.
std::uint32_t ref_block_prefix(std::string_view id) {
    std::uint32_t prefix = 0;
    for (int byte = 3; byte >= 0; --byte) {
        std::uint32_t value = 0;
        std::from_chars(id.data() + 8 + 2 * byte, id.data() + 10 + 2 * byte, value, 16);
        prefix = (prefix << 8) | value;
    }
    return prefix;
}

struct Fork {
    std::uint32_t from;
    std::uint64_t salt;
};

// What a request sees of the node's moving state, taken once per request.
struct View {
    std::uint32_t head = 0;
    std::uint32_t lib = 0;
    std::vector<Fork> forks;

    std::uint64_t salt(std::uint32_t block) const {
        std::uint64_t salt = 0;
        for (const Fork& fork : forks)
            if (fork.from <= block) salt = fork.salt;
        return salt;
    }
};

// Counts one request in flight for its lifetime and raises the peak.
class InFlight {
public:
    InFlight(std::atomic<std::uint32_t>& count, std::atomic<std::uint32_t>& peak) : count_(count) {
        const std::uint32_t now = count_.fetch_add(1) + 1;
        std::uint32_t seen = peak.load();
        while (seen < now && !peak.compare_exchange_weak(seen, now)) {
        }
    }
    ~InFlight() { count_.fetch_sub(1); }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;

private:
    std::atomic<std::uint32_t>& count_;
};

}  // namespace

namespace {

constexpr std::pair<std::string_view, FaultKind> kFaultNames[] = {
    {"delay", FaultKind::delay},         {"hang", FaultKind::hang},           {"http_500", FaultKind::http_500},
    {"http_503", FaultKind::http_503},   {"rpc_error", FaultKind::rpc_error}, {"truncated", FaultKind::truncated},
    {"malformed", FaultKind::malformed}, {"oversized", FaultKind::oversized}, {"wrong_block", FaultKind::wrong_block}};

}  // namespace

std::optional<FaultKind> parse_fault_kind(std::string_view name) {
    for (const auto& [text, kind] : kFaultNames)
        if (text == name) return kind;
    return std::nullopt;
}

std::string_view fault_kind_name(FaultKind kind) {
    for (const auto& [text, known] : kFaultNames)
        if (known == kind) return text;
    return "none";
}

struct Node::Impl {
    NodeOptions options;
    std::unique_ptr<RealChain> real;    // null on the synthetic chain
    SyntheticChain synthetic;           // the synthetic chain, or the content of forked real blocks
    wallet::JsonPtr global_properties;  // NAI form
    std::unordered_map<std::string, std::uint32_t> account_index;

    // Moving state.
    std::mutex mutex;
    std::chrono::steady_clock::time_point epoch;
    std::uint32_t head_at_epoch = 0;
    std::int64_t head_adjustment = 0;
    std::chrono::milliseconds block_interval{0};
    std::uint32_t lib_lag = 1;
    bool irreversible = true;
    std::vector<Fork> forks;
    std::uint64_t forks_made = 0;
    FaultOptions faults;
    std::uint64_t faults_left = 0;  // with faults.count
    // Requests that passed the faults' method filter: the schedule rolls on
    // this count, so the n-th batch a client asks for meets the same fault
    // whatever head polls ran between (a client's timing varies; the
    // schedule of a seed must not).
    std::uint64_t fault_candidates = 0;

    std::atomic<std::uint64_t> rpc_requests{0};
    // JSON-RPC requests being handled now, and the most at once since the
    // start or the last {"reset_peak": true} (what a router's upstream bound keeps low).
    std::atomic<std::uint32_t> rpc_in_flight{0};
    std::atomic<std::uint32_t> rpc_in_flight_peak{0};
    std::atomic<std::uint64_t> faults_injected{0};
    // The proxy in front (options.proxy).
    AnswerCache answer_cache;
    RateLimiter rate_limiter;
    std::atomic<std::uint64_t> batches_refused{0};
    std::atomic<std::uint32_t> history_lag{0};
    std::condition_variable_any delay_wake;
    std::mutex delay_mutex;

    // Account history of the synthetic chain, built on demand.
    struct History {
        std::mutex mutex;
        std::uint32_t first_block = 1;
        std::uint32_t indexed_to = 0;                     // blocks (first_block, indexed_to] are in
        std::vector<std::vector<std::uint64_t>> entries;  // per account: block << 24 | op index
    } history;

    explicit Impl(NodeOptions node_options) : options(std::move(node_options)), synthetic(options.synthetic) {}

    bool is_real() const { return real != nullptr; }

    // -- state --------------------------------------------------------------
    std::uint32_t head_locked() const {
        std::int64_t head = static_cast<std::int64_t>(head_at_epoch) + head_adjustment;
        if (block_interval.count() > 0) head += (std::chrono::steady_clock::now() - epoch) / block_interval;
        return static_cast<std::uint32_t>(std::clamp<std::int64_t>(head, 1, 0xfffffff0LL));
    }
    View view() {
        std::lock_guard lock(mutex);
        View v;
        v.head = head_locked();
        v.lib = irreversible ? (v.head > lib_lag ? v.head - lib_lag : 0) : 0;
        v.forks = forks;
        return v;
    }
    void set_head_locked(std::uint32_t head) { head_adjustment += static_cast<std::int64_t>(head) - head_locked(); }

    // -- chain content ------------------------------------------------------
    std::string block_id(const View& v, std::uint32_t block) const {
        std::uint64_t salt = v.salt(block);
        if (is_real() && salt == 0)
            if (auto id = real->known_id(block)) return *id;
        return synthetic.block_id(block, salt);
    }
    std::int64_t block_time(std::uint32_t block) const {
        return is_real() ? real->time_of(block) : SyntheticChain::time_of(block);
    }
    bool real_content(const View& v, std::uint32_t block) const { return is_real() && v.salt(block) == 0; }
    std::string witness(const View& v, std::uint32_t block) const {
        if (real_content(v, block)) return real->witness_of(block);
        return std::string(synthetic.account(synthetic.witness_index(block)));
    }

    void write_real_op(JsonWriter& out, const RealOp& op, Form form) const;
    void write_real_op_body(JsonWriter& out, const RealOp& op, Form form) const;
    void write_ops(const View& v, std::uint32_t block, bool only_virtual, Form form, JsonWriter& out) const;
    void write_header(const View& v, std::uint32_t block, JsonWriter& out) const;
    void write_block(const View& v, std::uint32_t block, Form form, JsonWriter& out) const;
    void write_real_block_legacy(const json_t* block, std::uint32_t number, JsonWriter& out) const;
    void write_global_properties(const View& v, Form form, JsonWriter& out) const;

    // -- account history ----------------------------------------------------
    struct HistoryItem {
        std::uint64_t seq;
        std::uint32_t block;
        std::uint32_t index;  // op index in the block (synthetic) or in the real chain's op list
    };
    // The account's entries visible to the request, ascending.
    std::vector<HistoryItem> history_of(const View& v, const std::string& account, bool include_reversible);
    void extend_history_locked(const View& v);
    void truncate_history(std::uint32_t from_block);
    void write_history_item(const View& v, const HistoryItem& item, Form form, JsonWriter& out) const;

    // -- JSON-RPC -----------------------------------------------------------
    struct CallFault {
        bool rpc_error = false;
        bool wrong_block = false;
    };
    using Method = std::optional<RpcError> (Impl::*)(const json_t* params, const View& v, const CallFault& fault,
                                                     JsonWriter& out);
    Method find_method(std::string_view api, std::string_view method, std::optional<RpcError>& error) const;
    void rpc_one(const json_t* request, const View& v, const CallFault& fault, JsonWriter& out);
    static void write_error(JsonWriter& out, const json_t* id, const RpcError& error);

    std::optional<RpcError> ops_in_block_nai(const json_t*, const View&, const CallFault&, JsonWriter&);
    std::optional<RpcError> ops_in_block_condenser(const json_t*, const View&, const CallFault&, JsonWriter&);
    std::optional<RpcError> global_properties_nai(const json_t*, const View&, const CallFault&, JsonWriter&);
    std::optional<RpcError> global_properties_condenser(const json_t*, const View&, const CallFault&, JsonWriter&);
    std::optional<RpcError> block_header_nai(const json_t*, const View&, const CallFault&, JsonWriter&);
    std::optional<RpcError> block_header_condenser(const json_t*, const View&, const CallFault&, JsonWriter&);
    std::optional<RpcError> block_nai(const json_t*, const View&, const CallFault&, JsonWriter&);
    std::optional<RpcError> block_condenser(const json_t*, const View&, const CallFault&, JsonWriter&);
    std::optional<RpcError> block_range(const json_t*, const View&, const CallFault&, JsonWriter&);
    std::optional<RpcError> one_block_nai(const json_t* params, const View& v, bool whole_block, JsonWriter& out);
    std::optional<RpcError> one_block_condenser(const json_t* params, const View& v, bool whole_block, JsonWriter& out);
    std::optional<RpcError> account_history_nai(const json_t*, const View&, const CallFault&, JsonWriter&);
    std::optional<RpcError> account_history_condenser(const json_t*, const View&, const CallFault&, JsonWriter&);
    std::optional<RpcError> get_methods(const json_t*, const View&, const CallFault&, JsonWriter&);
    std::optional<RpcError> find_accounts(const json_t*, const View&, const CallFault&, JsonWriter&);
    std::optional<RpcError> get_accounts(const json_t*, const View&, const CallFault&, JsonWriter&);
    std::optional<RpcError> write_accounts(const json_t* names, const View& v, Form form, JsonWriter& out);
    std::optional<RpcError> account_history(const View& v, const std::string& account, std::uint64_t start,
                                            std::uint32_t limit, bool include_reversible,
                                            std::optional<std::uint64_t> filter_low,
                                            std::optional<std::uint64_t> filter_high, Form form, JsonWriter& out);
    std::uint32_t served_block(const View& v, std::uint32_t block, const CallFault& fault) const;
    // The last block the account-history backend (HAfAH) has.
    std::uint32_t history_head(const View& v) const {
        const std::uint32_t lag = history_lag.load();
        return v.head > lag ? v.head - lag : 0;
    }
    // Drone's cache key and time to live of a call; nullopt: not cached.
    std::optional<std::chrono::milliseconds> cache_ttl(std::string_view api, std::string_view method, const json_t* params,
                                                       const View& v) const;
    // Calls the backend answered in this request (not from the cache).
    static inline thread_local std::size_t backend_calls = 0;

    // -- HTTP ---------------------------------------------------------------
    void handle_rpc(const wallet::HttpRequest& request, wallet::HttpResponse& response);
    void handle_control(const wallet::HttpRequest& request, wallet::HttpResponse& response);
    std::optional<FaultKind> decide_fault(const json_t* body);
    std::string status_json();
    std::string describe() const;
};

// ---------------------------------------------------------------------------
// Chain content

void Node::Impl::write_real_op(JsonWriter& out, const RealOp& op, Form form) const {
    out.raw("{\"trx_id\":");
    out.string(op.trx_id);
    out.raw(",\"block\":");
    out.uint(op.block);
    out.raw(",\"trx_in_block\":");
    out.uint(op.trx_in_block);
    out.raw(",\"op_in_trx\":");
    out.uint(op.op_in_trx);
    out.raw(",\"virtual_op\":");
    out.boolean(op.virtual_op);
    out.raw(",\"timestamp\":");
    out.string(op.timestamp);
    out.raw(",\"op\":");
    write_real_op_body(out, op, form);
    out.raw(form == Form::nai ? std::string_view(",\"operation_id\":0}") : std::string_view("}"));
}

void Node::Impl::write_real_op_body(JsonWriter& out, const RealOp& op, Form form) const {
    if (form == Form::nai) {
        out.raw("{\"type\":\"");
        out.raw(op.type);
        out.raw("_operation\",\"value\":");
        out.json(op.value.get());
        out.put('}');
    } else {
        out.raw("[\"");
        out.raw(op.type);
        out.raw("\",");
        write_legacy_value(out, op.value.get(), SymbolTable::mainnet());
        out.put(']');
    }
}

void Node::Impl::write_ops(const View& v, std::uint32_t block, bool only_virtual, Form form, JsonWriter& out) const {
    bool first = true;
    if (real_content(v, block)) {
        for (const RealOp& op : real->ops_of(block)) {
            if (only_virtual && !op.virtual_op) continue;
            if (!first) out.put(',');
            first = false;
            write_real_op(out, op, form);
        }
        return;
    }
    thread_local SynBlock generated;
    synthetic.generate(block, v.salt(block), generated);
    EnvelopePrefix prefix;
    std::uint32_t prefix_trx = kBlockLevel - 1;  // no transaction yet
    for (const SynOp& op : generated.ops) {
        if ((only_virtual && !op.is_virtual) || !synthetic.emitted(op)) continue;
        if (op.trx_in_block != prefix_trx) {
            prefix_trx = op.trx_in_block;
            synthetic.envelope_prefix(generated, prefix_trx, prefix);
        }
        if (!first) out.put(',');
        first = false;
        synthetic.write_envelope(out, generated, op, form, prefix);
    }
}

void Node::Impl::write_header(const View& v, std::uint32_t block, JsonWriter& out) const {
    out.raw("{\"previous\":\"");
    out.raw(block > 1 ? block_id(v, block - 1) : std::string(kZeroId));
    out.raw("\",\"timestamp\":\"");
    out.raw(format_time(block_time(block)));
    out.raw("\",\"witness\":");
    out.string(witness(v, block));
    out.raw(",\"transaction_merkle_root\":\"");
    if (real_content(v, block)) {
        auto root = real->merkle_root_of(block);
        bool has_transactions = std::any_of(real->ops_of(block).begin(), real->ops_of(block).end(),
                                            [](const RealOp& op) { return !op.virtual_op; });
        out.raw(root ? *root : has_transactions ? synthetic.transaction_merkle_root(block, 0) : std::string(kZeroId));
    } else {
        out.raw(synthetic.transaction_merkle_root(block, v.salt(block)));
    }
    out.raw("\",\"extensions\":[]}");
}

// condenser_api's block: the legacy form, and each transaction also carries
// its id, block number and position.
void Node::Impl::write_real_block_legacy(const json_t* block, std::uint32_t number, JsonWriter& out) const {
    wallet::JsonPtr copy = wallet::json_own(json_deep_copy(block));
    json_t* transactions = json_object_get(copy.get(), "transactions");
    const json_t* ids = json_object_get(block, "transaction_ids");
    for (std::size_t t = 0; t < json_array_size(transactions); ++t) {
        json_t* transaction = json_array_get(transactions, t);
        json_object_set(transaction, "transaction_id", json_array_get(ids, t));
        json_object_set_new(transaction, "block_num", json_integer(number));
        json_object_set_new(transaction, "transaction_num", json_integer(static_cast<json_int_t>(t)));
    }
    write_legacy_value(out, copy.get(), SymbolTable::mainnet());
}

void Node::Impl::write_block(const View& v, std::uint32_t block, Form form, JsonWriter& out) const {
    if (real_content(v, block)) {
        if (const json_t* full = real->full_block(block)) {
            if (form == Form::nai)
                out.json(full);
            else
                write_real_block_legacy(full, block, out);
            return;
        }
    }
    const std::string id = block_id(v, block);
    const std::string previous = block > 1 ? block_id(v, block - 1) : std::string(kZeroId);
    const std::int64_t time = block_time(block);
    const std::uint32_t witness_index = synthetic.witness_index(block);

    // Transactions: the block's real operations grouped by transaction.
    struct Transaction {
        std::uint32_t index;
        std::string id;
    };
    std::vector<Transaction> transactions;
    thread_local SynBlock generated;
    bool real_ops = real_content(v, block);
    if (real_ops) {
        for (const RealOp& op : real->ops_of(block))
            if (!op.virtual_op && (transactions.empty() || transactions.back().index != op.trx_in_block))
                transactions.push_back({op.trx_in_block, op.trx_id});
    } else {
        synthetic.generate(block, v.salt(block), generated);
        for (std::uint32_t t = 0; t < generated.transactions; ++t)
            transactions.push_back({t, synthetic.trx_id(block, generated.salt, t)});
    }

    write_header(v, block, out);
    out.truncate(out.size() - 1);  // reopen the header object
    out.raw(",\"witness_signature\":\"");
    out.raw(synthetic.witness_signature(block, v.salt(block)));
    out.raw("\",\"transactions\":[");
    const std::string expiration = format_time(time + 60);
    for (std::size_t t = 0; t < transactions.size(); ++t) {
        if (t > 0) out.put(',');
        out.raw("{\"ref_block_num\":");
        out.uint((block - 1) & 0xffff);
        out.raw(",\"ref_block_prefix\":");
        out.uint(ref_block_prefix(previous));
        out.raw(",\"expiration\":\"");
        out.raw(expiration);
        out.raw("\",\"operations\":[");
        bool first = true;
        if (real_ops) {
            for (const RealOp& op : real->ops_of(block)) {
                if (op.virtual_op || op.trx_in_block != transactions[t].index) continue;
                if (!first) out.put(',');
                first = false;
                write_real_op_body(out, op, form);
            }
        } else {
            for (const SynOp& op : generated.ops) {
                if (op.is_virtual || op.trx_in_block != transactions[t].index) continue;
                if (!first) out.put(',');
                first = false;
                synthetic.write_op(out, generated, op, form);
            }
        }
        out.raw("],\"extensions\":[],\"signatures\":[\"");
        out.raw(synthetic.witness_signature(block, splitmix64(transactions[t].index + 1)));
        out.raw("\"]");
        if (form == Form::legacy) {
            out.raw(",\"transaction_id\":\"");
            out.raw(transactions[t].id);
            out.raw("\",\"block_num\":");
            out.uint(block);
            out.raw(",\"transaction_num\":");
            out.uint(transactions[t].index);
        }
        out.put('}');
    }
    out.raw("],\"block_id\":\"");
    out.raw(id);
    out.raw("\",\"signing_key\":\"");
    out.raw(synthetic.signing_key(witness_index));
    out.raw("\",\"transaction_ids\":[");
    for (std::size_t t = 0; t < transactions.size(); ++t) {
        if (t > 0) out.put(',');
        out.plain_string(transactions[t].id);
    }
    out.raw("]}");
}

void Node::Impl::write_global_properties(const View& v, Form form, JsonWriter& out) const {
    const json_t* base = global_properties.get();
    std::uint32_t template_head =
        static_cast<std::uint32_t>(json_integer_value(json_object_get(base, "head_block_number")));
    json_int_t template_slot = json_integer_value(json_object_get(base, "current_aslot"));
    out.put('{');
    const char* key;
    json_t* member;
    bool first = true;
    json_object_foreach(const_cast<json_t*>(base), key, member) {
        std::string_view name = key;
        if (form == Form::legacy && name == "id") continue;
        if (!first) out.put(',');
        first = false;
        out.string(name);
        out.put(':');
        if (name == "head_block_number") {
            out.uint(v.head);
        } else if (name == "head_block_id") {
            out.plain_string(block_id(v, v.head));
        } else if (name == "time") {
            out.plain_string(format_time(block_time(v.head)));
        } else if (name == "last_irreversible_block_num") {
            out.uint(v.lib);
        } else if (name == "current_witness") {
            out.string(witness(v, v.head));
        } else if (name == "current_aslot") {
            out.integer(template_slot + static_cast<json_int_t>(v.head) - static_cast<json_int_t>(template_head));
        } else if (form == Form::legacy) {
            write_legacy_value(out, member,
                               options.synthetic.naming == Naming::legacy && !is_real() ? SymbolTable::steem()
                                                                                        : SymbolTable::mainnet());
        } else {
            out.json(member);
        }
    }
    out.put('}');
}

// ---------------------------------------------------------------------------
// Account history

void Node::Impl::truncate_history(std::uint32_t from_block) {
    if (is_real()) return;
    std::lock_guard lock(history.mutex);
    if (history.indexed_to < from_block) return;
    for (auto& list : history.entries)
        while (!list.empty() && (list.back() >> 24) >= from_block) list.pop_back();
    history.indexed_to = from_block - 1;
}

void Node::Impl::extend_history_locked(const View& v) {
    if (history.entries.empty()) history.entries.resize(synthetic.account_count());
    if (history.indexed_to < history.first_block - 1) history.indexed_to = history.first_block - 1;
    SynBlock generated;
    std::array<std::uint32_t, 3> accounts{};
    for (std::uint32_t block = history.indexed_to + 1; block <= v.head; ++block) {
        synthetic.generate(block, v.salt(block), generated);
        for (std::size_t i = 0; i < generated.ops.size(); ++i) {
            if (!synthetic.emitted(generated.ops[i])) continue;
            int n = synthetic.impacted(generated.ops[i], accounts);
            for (int k = 0; k < n; ++k)
                history.entries[accounts[static_cast<std::size_t>(k)]].push_back(
                    (static_cast<std::uint64_t>(block) << 24) | i);
        }
    }
    history.indexed_to = std::max(history.indexed_to, v.head);
}

std::vector<Node::Impl::HistoryItem> Node::Impl::history_of(const View& v, const std::string& account,
                                                            bool include_reversible) {
    std::vector<HistoryItem> items;
    std::uint32_t visible_to = include_reversible ? v.head : v.lib;
    if (is_real()) {
        for (const HistoryEntry& entry : real->history_of(account)) {
            std::uint32_t block = real->all_ops()[entry.op_index].block;
            if (block > visible_to || v.salt(block) != 0) continue;
            items.push_back({entry.seq, block, entry.op_index});
        }
        return items;
    }
    auto found = account_index.find(account);
    if (found == account_index.end()) return items;
    std::lock_guard lock(history.mutex);
    if (history.indexed_to < v.head) extend_history_locked(v);
    const auto& list = history.entries[found->second];
    for (std::size_t seq = 0; seq < list.size(); ++seq) {
        auto block = static_cast<std::uint32_t>(list[seq] >> 24);
        if (block > visible_to) break;
        items.push_back({seq, block, static_cast<std::uint32_t>(list[seq] & 0xffffff)});
    }
    return items;
}

void Node::Impl::write_history_item(const View& v, const HistoryItem& item, Form form, JsonWriter& out) const {
    out.put('[');
    out.uint(item.seq);
    out.put(',');
    if (is_real()) {
        write_real_op(out, real->all_ops()[item.index], form);
    } else {
        thread_local SynBlock generated;
        if (generated.num != item.block || generated.salt != v.salt(item.block) || generated.ops.empty())
            synthetic.generate(item.block, v.salt(item.block), generated);
        const SynOp& op = generated.ops[item.index];
        EnvelopePrefix prefix;
        synthetic.envelope_prefix(generated, op.trx_in_block, prefix);
        synthetic.write_envelope(out, generated, op, form, prefix);
    }
    out.put(']');
}

std::optional<RpcError> Node::Impl::account_history(const View& v, const std::string& account, std::uint64_t start,
                                                    std::uint32_t limit, bool include_reversible,
                                                    std::optional<std::uint64_t> filter_low,
                                                    std::optional<std::uint64_t> filter_high, Form form,
                                                    JsonWriter& out) {
    if (limit > 1000)
        return assert_failed("args.limit <= 1000",
                             "limit of " + std::to_string(limit) + " is greater than maxmimum allowed");
    if (start < static_cast<std::uint32_t>(limit - 1))
        return assert_failed("args.start >= args.limit-1",
                             "start must be greater than or equal to limit-1 (start is 0-based index)");
    std::vector<HistoryItem> items = history_of(v, account, include_reversible);
    auto newest = std::upper_bound(items.begin(), items.end(), start,
                                   [](std::uint64_t s, const HistoryItem& item) { return s < item.seq; });
    std::vector<const HistoryItem*> chosen;
    if (!filter_low && !filter_high) {
        for (auto it = newest; it != items.begin() && chosen.size() < limit;) chosen.push_back(&*--it);
    } else if (newest != items.begin()) {
        // hived reads at most 2000 entries back from the newest one for a filtered query.
        std::uint64_t low = filter_low.value_or(0), high = filter_high.value_or(0);
        std::uint64_t newest_seq = std::prev(newest)->seq;
        std::uint64_t window_end = newest_seq >= 1999 ? newest_seq - 1999 : 0;
        bool more_before = false;
        thread_local SynBlock generated;
        for (auto it = newest; it != items.begin() && chosen.size() < limit;) {
            const HistoryItem& item = *--it;
            if (item.seq < window_end) {
                more_before = true;
                break;
            }
            int type = -1;
            if (is_real()) {
                type = real->all_ops()[item.index].type_id;
            } else {
                if (generated.num != item.block || generated.salt != v.salt(item.block) || generated.ops.empty())
                    synthetic.generate(item.block, v.salt(item.block), generated);
                type = synthetic.type_id(generated.ops[item.index].kind);
            }
            bool accepted = type >= 0 && (type < 64 ? (low >> type) & 1 : (high >> (type - 64)) & 1);
            if (accepted) chosen.push_back(&item);
        }
        if (chosen.empty() && more_before)
            return assert_failed(
                "total_processed_items < 2000",
                "Could not find filtered operation in 2000 operations, to continue searching, set start=" +
                    std::to_string(newest_seq >= 2000 ? newest_seq - 2000 : 0) + ".");
    }
    if (form == Form::nai) out.raw("{\"history\":");
    out.put('[');
    for (auto it = chosen.rbegin(); it != chosen.rend(); ++it) {
        if (it != chosen.rbegin()) out.put(',');
        write_history_item(v, **it, form, out);
    }
    out.put(']');
    if (form == Form::nai) out.put('}');
    return std::nullopt;
}

// ---------------------------------------------------------------------------
// Methods

std::uint32_t Node::Impl::served_block(const View& v, std::uint32_t block, const CallFault& fault) const {
    if (!fault.wrong_block) return block;
    return block + 1 <= v.head ? block + 1 : block - 1;
}

std::optional<RpcError> Node::Impl::ops_in_block_nai(const json_t* params, const View& v, const CallFault& fault,
                                                     JsonWriter& out) {
    if (auto error = as_object_args(params)) return error;
    std::uint32_t block = 0;
    bool only_virtual = false;
    std::optional<bool> include_reversible;
    if (auto error = to_uint32(json_object_get(params, "block_num"), block)) return error;
    if (auto error = to_bool(json_object_get(params, "only_virtual"), only_virtual)) return error;
    if (auto error = optional_member<bool>(params, "include_reversible", include_reversible, to_bool)) return error;
    std::uint32_t visible_to = std::min(include_reversible.value_or(false) ? v.head : v.lib, history_head(v));
    out.raw("{\"ops\":[");
    if (block >= 1 && block <= visible_to) write_ops(v, served_block(v, block, fault), only_virtual, Form::nai, out);
    out.raw("]}");
    return std::nullopt;
}

std::optional<RpcError> Node::Impl::ops_in_block_condenser(const json_t* params, const View& v, const CallFault& fault,
                                                           JsonWriter& out) {
    if (auto error = as_array_args(params)) return error;
    std::size_t count = json_array_size(params);
    if (count != 1 && count != 2)
        return assert_failed("args.size() == 1 || args.size() == 2",
                             "Expected 1-2 arguments, was " + std::to_string(count));
    std::uint32_t block = 0;
    bool only_virtual = false;
    if (count == 2)
        if (auto error = to_bool(json_array_get(params, 1), only_virtual)) return error;
    if (auto error = to_uint32(json_array_get(params, 0), block)) return error;
    out.put('[');
    if (block >= 1 && block <= std::min(v.lib, history_head(v)))
        write_ops(v, served_block(v, block, fault), only_virtual, Form::legacy, out);
    out.put(']');
    return std::nullopt;
}

std::optional<RpcError> Node::Impl::global_properties_nai(const json_t*, const View& v, const CallFault&,
                                                          JsonWriter& out) {
    write_global_properties(v, Form::nai, out);
    return std::nullopt;
}

std::optional<RpcError> Node::Impl::global_properties_condenser(const json_t* params, const View& v, const CallFault&,
                                                                JsonWriter& out) {
    if (auto error = as_array_args(params)) return error;
    if (auto error = check_arg_count(params, 0)) return error;
    write_global_properties(v, Form::legacy, out);
    return std::nullopt;
}

// block_api.get_block(_header): {"<member>": ...}, or {} beyond the head.
std::optional<RpcError> Node::Impl::one_block_nai(const json_t* params, const View& v, bool whole_block,
                                                  JsonWriter& out) {
    if (auto error = as_object_args(params)) return error;
    std::uint32_t block = 0;
    if (auto error = to_uint32(json_object_get(params, "block_num"), block)) return error;
    if (block < 1 || block > v.head) {
        out.raw("{}");
        return std::nullopt;
    }
    out.raw(whole_block ? std::string_view("{\"block\":") : std::string_view("{\"header\":"));
    if (whole_block)
        write_block(v, block, Form::nai, out);
    else
        write_header(v, block, out);
    out.put('}');
    return std::nullopt;
}

// condenser_api.get_block(_header): the object, or null beyond the head.
std::optional<RpcError> Node::Impl::one_block_condenser(const json_t* params, const View& v, bool whole_block,
                                                        JsonWriter& out) {
    if (auto error = as_array_args(params)) return error;
    if (auto error = check_arg_count(params, 1)) return error;
    std::uint32_t block = 0;
    if (auto error = to_uint32(json_array_get(params, 0), block)) return error;
    if (block < 1 || block > v.head)
        out.null();
    else if (whole_block)
        write_block(v, block, Form::legacy, out);
    else
        write_header(v, block, out);
    return std::nullopt;
}

std::optional<RpcError> Node::Impl::block_header_nai(const json_t* params, const View& v, const CallFault&,
                                                     JsonWriter& out) {
    return one_block_nai(params, v, false, out);
}
std::optional<RpcError> Node::Impl::block_nai(const json_t* params, const View& v, const CallFault&, JsonWriter& out) {
    return one_block_nai(params, v, true, out);
}
std::optional<RpcError> Node::Impl::block_header_condenser(const json_t* params, const View& v, const CallFault&,
                                                           JsonWriter& out) {
    return one_block_condenser(params, v, false, out);
}
std::optional<RpcError> Node::Impl::block_condenser(const json_t* params, const View& v, const CallFault&,
                                                    JsonWriter& out) {
    return one_block_condenser(params, v, true, out);
}

std::optional<RpcError> Node::Impl::block_range(const json_t* params, const View& v, const CallFault&,
                                                JsonWriter& out) {
    if (auto error = as_object_args(params)) return error;
    std::uint32_t start = 0;
    std::uint32_t count = 0;
    if (auto error = to_uint32(json_object_get(params, "starting_block_num"), start)) return error;
    if (auto error = to_uint32(json_object_get(params, "count"), count)) return error;
    if (start == 0)
        return assert_failed("starting_block_num > 0 && \"fetch_block_range\"", "Invalid starting block numberrethrow");
    if (count > 1000)
        return assert_failed("count <= 1000 && \"fetch_block_range\"",
                             "You can only ask for 1000 blocks at a timerethrow");
    out.raw("{\"blocks\":[");
    for (std::uint64_t block = start; block < std::uint64_t{start} + count && block <= v.head; ++block) {
        if (block != start) out.put(',');
        write_block(v, static_cast<std::uint32_t>(block), Form::nai, out);
    }
    out.raw("]}");
    return std::nullopt;
}

std::optional<RpcError> Node::Impl::account_history_nai(const json_t* params, const View& v, const CallFault&,
                                                        JsonWriter& out) {
    if (auto error = as_object_args(params)) return error;
    std::string account;
    std::uint64_t start = kNoStart;
    std::uint32_t limit = 1000;
    std::optional<bool> include_reversible;
    std::optional<std::uint64_t> low, high;
    if (auto error = to_account(json_object_get(params, "account"), account)) return error;
    if (const json_t* value = json_object_get(params, "start"))
        if (auto error = to_uint64(value, start)) return error;
    if (const json_t* value = json_object_get(params, "limit"))
        if (auto error = to_uint32(value, limit)) return error;
    if (auto error = optional_member<bool>(params, "include_reversible", include_reversible, to_bool)) return error;
    if (auto error = optional_member<std::uint64_t>(params, "operation_filter_low", low, to_uint64)) return error;
    if (auto error = optional_member<std::uint64_t>(params, "operation_filter_high", high, to_uint64)) return error;
    return account_history(v, account, start, limit, include_reversible.value_or(false), low, high, Form::nai, out);
}

std::optional<RpcError> Node::Impl::account_history_condenser(const json_t* params, const View& v, const CallFault&,
                                                              JsonWriter& out) {
    if (auto error = as_array_args(params)) return error;
    std::size_t count = json_array_size(params);
    if (count < 3 || count > 5)
        return assert_failed("args.size() == 3 || args.size() == 4 || args.size() == 5",
                             "Expected 3, 4, or 5 argument(s), was " + std::to_string(count));
    std::optional<std::uint64_t> low, high;
    std::uint64_t value = 0;
    if (count >= 4) {
        if (auto error = to_uint64(json_array_get(params, 3), value)) return error;
        low = value;
    }
    if (count >= 5) {
        if (auto error = to_uint64(json_array_get(params, 4), value)) return error;
        high = value;
    }
    std::string account;
    std::uint64_t start = 0;
    std::uint32_t limit = 0;
    if (auto error = to_account(json_array_get(params, 0), account)) return error;
    if (auto error = to_uint64(json_array_get(params, 1), start)) return error;
    if (auto error = to_uint32(json_array_get(params, 2), limit)) return error;
    return account_history(v, account, start, limit, false, low, high, Form::legacy, out);
}

// The accounts named (unknown names skipped, as hived does) with the ledger's
// balances at the head (--ledger only: without it the chain keeps none).
std::optional<RpcError> Node::Impl::write_accounts(const json_t* names, const View& v, Form form, JsonWriter& out) {
    SyntheticLedger* ledger = is_real() ? nullptr : synthetic.ledger();
    if (ledger == nullptr) return assert_failed("ledger", "account balances are served on the synthetic chain with --ledger");
    if (!json_is_array(names)) return RpcError{kParseParamsError, "Parse Error:Couldn't parse account names"};
    const auto balances = ledger->balances_at(synthetic, v.head, [&v](std::uint32_t block) { return v.salt(block); });
    out.put('[');
    bool first = true;
    std::size_t index = 0;
    const json_t* name = nullptr;
    json_array_foreach(names, index, name) {
        const auto found = json_is_string(name) ? account_index.find(json_string_value(name)) : account_index.end();
        if (found == account_index.end()) continue;
        if (!first) out.put(',');
        first = false;
        write_account(out, synthetic, found->second, balances[found->second], form);
    }
    out.put(']');
    return std::nullopt;
}

std::optional<RpcError> Node::Impl::find_accounts(const json_t* params, const View& v, const CallFault&, JsonWriter& out) {
    if (auto error = as_object_args(params)) return error;
    out.raw("{\"accounts\":");
    if (auto error = write_accounts(json_object_get(params, "accounts"), v, Form::nai, out)) return error;
    out.put('}');
    return std::nullopt;
}

std::optional<RpcError> Node::Impl::get_accounts(const json_t* params, const View& v, const CallFault&, JsonWriter& out) {
    if (auto error = as_array_args(params)) return error;
    if (auto error = check_arg_count(params, 1)) return error;
    return write_accounts(json_array_get(params, 0), v, Form::legacy, out);
}

struct MethodEntry {
    std::string_view api;
    std::string_view method;
    Node::Impl::Method handler;
};

const std::vector<MethodEntry>& method_table() {
    using I = Node::Impl;
    static const std::vector<MethodEntry> kMethods = {
        {"account_history_api", "get_account_history", &I::account_history_nai},
        {"account_history_api", "get_ops_in_block", &I::ops_in_block_nai},
        {"block_api", "get_block", &I::block_nai},
        {"block_api", "get_block_header", &I::block_header_nai},
        {"block_api", "get_block_range", &I::block_range},
        {"condenser_api", "get_account_history", &I::account_history_condenser},
        {"condenser_api", "get_block", &I::block_condenser},
        {"condenser_api", "get_block_header", &I::block_header_condenser},
        {"condenser_api", "get_dynamic_global_properties", &I::global_properties_condenser},
        {"condenser_api", "get_ops_in_block", &I::ops_in_block_condenser},
        {"condenser_api", "get_accounts", &I::get_accounts},
        {"database_api", "find_accounts", &I::find_accounts},
        {"database_api", "get_dynamic_global_properties", &I::global_properties_nai},
        {"jsonrpc", "get_methods", &I::get_methods},
    };
    return kMethods;
}

std::optional<RpcError> Node::Impl::get_methods(const json_t*, const View&, const CallFault&, JsonWriter& out) {
    out.put('[');
    bool first = true;
    for (const auto& entry : method_table()) {
        if (!first) out.put(',');
        first = false;
        out.put('"');
        out.raw(entry.api);
        out.put('.');
        out.raw(entry.method);
        out.put('"');
    }
    out.put(']');
    return std::nullopt;
}

Node::Impl::Method Node::Impl::find_method(std::string_view api, std::string_view method,
                                           std::optional<RpcError>& error) const {
    bool api_known = false;
    for (const auto& entry : method_table()) {
        if (entry.api != api) continue;
        api_known = true;
        if (entry.method == method) return entry.handler;
    }
    error = api_known ? RpcError{kParseParamsError,
                                 "Assert Exception:method_itr != api_itr->second.end(): Could not find method " +
                                     std::string(method)}
                      : RpcError{kParseParamsError,
                                 "Assert Exception:api_itr != data._registered_apis.end(): Could not find API " +
                                     std::string(api)};
    return nullptr;
}

void Node::Impl::write_error(JsonWriter& out, const json_t* id, const RpcError& error) {
    out.raw("{\"jsonrpc\":\"2.0\",\"error\":{\"code\":");
    out.integer(error.code);
    out.raw(",\"message\":");
    out.string(error.message);
    // hived attaches the fc exception (code, name, message, stack); its shape without the stack.
    struct FcException {
        std::string_view prefix;
        int code;
        std::string_view name;
    };
    static constexpr FcException kExceptions[] = {
        {"Assert Exception", 10, "assert_exception"},
        {"Parse Error", 4, "parse_error_exception"},
        {"Bad Cast", 7, "bad_cast_exception"},
    };
    FcException exception{"", 0, "exception"};
    for (const auto& candidate : kExceptions)
        if (error.message.starts_with(candidate.prefix)) exception = candidate;
    std::string_view name = exception.name;
    out.raw(",\"data\":{\"code\":");
    out.integer(exception.code);
    out.raw(",\"name\":\"");
    out.raw(name);
    out.raw("\",\"message\":");
    out.string(error.message.substr(0, error.message.find(':')));
    out.raw(",\"stack\":[]}},\"id\":");
    if (id != nullptr && (json_is_integer(id) || json_is_string(id)))
        out.json(id);
    else
        out.null();
    out.put('}');
}

// haf_api_node's Drone configuration: block_api and condenser_api get_block
// and get_block_header EXPIRE_IF_REVERSIBLE (9 s above the last irreversible
// block, for good at or below it), get_block_range NO_CACHE, everything else
// (get_ops_in_block, get_dynamic_global_properties ...) 1 s.
std::optional<std::chrono::milliseconds> Node::Impl::cache_ttl(std::string_view api, std::string_view method,
                                                               const json_t* params, const View& v) const {
    using std::chrono::milliseconds;
    if (method == "get_block_range" || api == "jsonrpc") return std::nullopt;
    if ((api == "block_api" || api == "condenser_api") && (method == "get_block" || method == "get_block_header")) {
        const json_t* number = json_is_array(params) ? json_array_get(params, 0) : json_object_get(params, "block_num");
        const json_int_t block = json_is_integer(number) ? json_integer_value(number) : 0;
        return block > v.lib ? milliseconds(9000) : milliseconds(std::chrono::hours(24));
    }
    return milliseconds(1000);
}

void Node::Impl::rpc_one(const json_t* request, const View& v, const CallFault& fault, JsonWriter& out) {
    if (!json_is_object(request)) {
        write_error(out, nullptr,
                    {kParseError, "Bad Cast:Invalid cast from " + std::string(fc_type_name(request)) + " to Object"});
        return;
    }
    const json_t* id = json_object_get(request, "id");
    if (id != nullptr && !json_is_integer(id) && !json_is_string(id))
        return write_error(out, nullptr,
                           {kInvalidRequest, "Only integer value or string is allowed for member \"id\""});
    const json_t* version = json_object_get(request, "jsonrpc");
    if (!json_is_string(version) || std::string_view(json_string_value(version)) != "2.0")
        return write_error(out, id, {kInvalidRequest, "jsonrpc value is not \"2.0\""});
    const json_t* method_value = json_object_get(request, "method");
    if (!json_is_string(method_value))
        return write_error(out, id, {kInvalidRequest, "A member \"method\" does not exist"});
    std::string_view method = json_string_value(method_value);
    const json_t* params = json_object_get(request, "params");

    std::string_view api_name, method_name;
    if (method == "call") {
        if (params == nullptr) return write_error(out, id, {kNoParams, "A member \"params\" does not exist"});
        std::size_t count = json_is_array(params) ? json_array_size(params) : 0;
        if (count != 2 && count != 3)
            return write_error(out, id,
                               {kParseParamsError,
                                "Assert Exception:v.size() == 2 || v.size() == 3: params should be "
                                "{\"api\", \"method\", \"args\""});
        const json_t* api = json_array_get(params, 0);
        const json_t* name = json_array_get(params, 1);
        if (!json_is_string(api) || !json_is_string(name))
            return write_error(
                out, id,
                {kServerError, "Bad Cast:Invalid cast from " +
                                   std::string(fc_type_name(json_is_string(api) ? name : api)) + " to string"});
        api_name = json_string_value(api);
        method_name = json_string_value(name);
        params = count == 3 ? json_array_get(params, 2) : nullptr;
    } else {
        std::size_t dot = method.find('.');
        if (dot == std::string_view::npos || method.find('.', dot + 1) != std::string_view::npos)
            return write_error(out, id,
                               {kParseParamsError,
                                "Assert Exception:v.size() == 2: method specification invalid. "
                                "Should be api.method"});
        api_name = method.substr(0, dot);
        method_name = method.substr(dot + 1);
    }

    std::optional<RpcError> error;
    Method handler = find_method(api_name, method_name, error);
    if (handler == nullptr) return write_error(out, id, *error);
    if (fault.rpc_error) return write_error(out, id, {kErrorDuringCall, "Unable to acquire READ lock"});

    // Every answer ends with the request's id.
    auto close_answer = [&out, id] {
        out.raw(",\"id\":");
        if (id != nullptr)
            out.json(id);
        else
            out.null();
        out.put('}');
    };

    // Drone answers from its cache what it may, keyed by the call as sent.
    std::optional<std::chrono::milliseconds> ttl;
    std::string cache_key;
    if (options.proxy.cache && !fault.wrong_block) ttl = cache_ttl(api_name, method_name, params, v);
    if (ttl) {
        std::unique_ptr<char, decltype(&std::free)> params_text(
            params != nullptr ? json_dumps(params, JSON_COMPACT | JSON_ENCODE_ANY) : nullptr, &std::free);
        cache_key = std::string(api_name) + "." + std::string(method_name) + "(" +
                    (params_text ? params_text.get() : "") + ")";
        if (auto hit = answer_cache.find(cache_key)) {
            out.raw("{\"jsonrpc\":\"2.0\",\"result\":");
            out.raw(*hit);
            close_answer();
            return;
        }
    }
    ++backend_calls;

    std::size_t mark = out.size();
    out.raw("{\"jsonrpc\":\"2.0\",\"result\":");
    const std::size_t result_start = out.size();
    if (auto failure = (this->*handler)(params, v, fault, out)) {
        out.truncate(mark);
        return write_error(out, id, *failure);
    }
    if (ttl) {
        // As Drone: errors, null, [] and {"blocks":[]} are never cached.
        std::string_view result(out.buffer().data() + result_start, out.size() - result_start);
        if (result != "null" && result != "[]" && result != "{\"blocks\":[]}") answer_cache.store(cache_key, result, *ttl);
    }
    close_answer();
}

// ---------------------------------------------------------------------------
// HTTP

std::optional<FaultKind> Node::Impl::decide_fault(const json_t* body) {
    std::lock_guard lock(mutex);
    if (faults.per_million == 0 || faults.kinds.empty()) return std::nullopt;
    if (faults.count && faults_left == 0) return std::nullopt;
    if (!faults.methods.empty()) {
        auto calls_one = [&](const json_t* request) {
            const json_t* method = json_object_get(request, "method");
            if (!json_is_string(method)) return false;
            std::string name = json_string_value(method);
            if (name == "call") {
                const json_t* params = json_object_get(request, "params");
                if (json_is_string(json_array_get(params, 0)) && json_is_string(json_array_get(params, 1)))
                    name = std::string(json_string_value(json_array_get(params, 0))) + "." +
                           json_string_value(json_array_get(params, 1));
            }
            return std::find(faults.methods.begin(), faults.methods.end(), name) != faults.methods.end();
        };
        bool matches = false;
        if (json_is_array(body)) {
            for (std::size_t i = 0; i < json_array_size(body) && !matches; ++i)
                matches = calls_one(json_array_get(body, i));
        } else {
            matches = calls_one(body);
        }
        if (!matches) return std::nullopt;
    }
    std::uint64_t roll = splitmix64(faults.seed ^ splitmix64(fault_candidates++));
    if (roll % 1000000 >= faults.per_million) return std::nullopt;
    if (faults.count) --faults_left;
    return faults.kinds[splitmix64(roll) % faults.kinds.size()];
}

void Node::Impl::handle_rpc(const wallet::HttpRequest& request, wallet::HttpResponse& response) {
    const ProxyOptions& proxy = options.proxy;
    response.close_connection = proxy.connection_close;
    if (proxy.rate_limit > 0) {
        // Caddy's limit, by remote host (the address without the port).
        const std::string address = request.peer.substr(0, request.peer.rfind(':'));
        if (auto retry_after = rate_limiter.admit(address, proxy.rate_limit, proxy.rate_window)) {
            response.status = 429;
            response.content_type = "text/plain";
            response.headers.emplace_back("Retry-After", std::to_string(*retry_after));
            return;
        }
    }
    std::uint64_t request_number = rpc_requests.fetch_add(1);
    InFlight in_flight(rpc_in_flight, rpc_in_flight_peak);
    json_error_t parse_error;
    wallet::JsonPtr body = wallet::json_own(parse_json(request.body, &parse_error));
    if (body && json_is_array(body.get()) && proxy.batch_limit > 0 && json_array_size(body.get()) > proxy.batch_limit) {
        batches_refused.fetch_add(1);
        const std::string limit = std::to_string(proxy.batch_limit);
        if (proxy.kind == ProxyKind::jussi) {
            // jussi: HTTP 200, one error object for the whole batch, id null.
            response.body = R"({"jsonrpc":"2.0","id":null,"error":{"code":1600,"message":"JSONRPC batch size of )" +
                            std::to_string(json_array_size(body.get())) + " exceeds " + limit +
                            R"(","data":{"error_id":"00000000-0000-4000-8000-000000000000","jussi_request_id":"000000000000000000"}}})";
        } else {
            response.status = 500;
            response.body = R"({"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"Request parameter error.",)"
                            R"("error":"Batch size too large, maximum allowed is )" + limit + R"(."}})";
        }
        return;
    }
    const FaultKind fault = body ? decide_fault(body.get()).value_or(FaultKind::none) : FaultKind::none;
    FaultOptions fault_settings;
    if (fault != FaultKind::none) {
        faults_injected.fetch_add(1);
        std::lock_guard lock(mutex);
        fault_settings = faults;
    }

    if (fault == FaultKind::hang) {
        response.hang_then_close = fault_settings.hang;
        return;
    }
    if (fault == FaultKind::http_500 || fault == FaultKind::http_503) {
        response.status = fault == FaultKind::http_500 ? 500 : 503;
        response.content_type = "text/html";
        response.body = "<html>\r\n<head><title>" + std::to_string(response.status) + " " +
                        std::string(wallet::http_reason_phrase(response.status)) +
                        "</title></head>\r\n<body>\r\n<center><h1>" + std::to_string(response.status) + " " +
                        std::string(wallet::http_reason_phrase(response.status)) +
                        "</h1></center>\r\n</body>\r\n</html>\r\n";
        return;
    }
    if (fault == FaultKind::delay) {
        std::unique_lock lock(delay_mutex);
        std::stop_token stop = request.stop;
        delay_wake.wait_for(lock, stop, fault_settings.delay, [] { return false; });
    }

    View v = view();
    backend_calls = 0;
    // Reused by every request of this connection's thread; sent without a copy.
    thread_local OutputBuffer out_buffer;
    out_buffer.clear();
    JsonWriter out(out_buffer);
    if (!body) {
        write_error(out, nullptr, {kServerError, std::string("Parse Error:") + parse_error.text});
    } else if (json_is_array(body.get())) {
        std::size_t count = json_array_size(body.get());
        if (count == 0) {
            write_error(out, nullptr, {kServerError, "Array is invalid"});
        } else {
            // Element faults hit one element of a batch.
            std::size_t faulty = static_cast<std::size_t>(splitmix64(request_number ^ 0xba7c4) % count);
            out.put('[');
            for (std::size_t i = 0; i < count; ++i) {
                if (i > 0) out.put(',');
                CallFault call_fault;
                call_fault.rpc_error = fault == FaultKind::rpc_error && i == faulty;
                call_fault.wrong_block = fault == FaultKind::wrong_block && i == faulty;
                rpc_one(json_array_get(body.get(), i), v, call_fault, out);
            }
            out.put(']');
        }
    } else {
        CallFault call_fault;
        call_fault.rpc_error = fault == FaultKind::rpc_error;
        call_fault.wrong_block = fault == FaultKind::wrong_block;
        rpc_one(body.get(), v, call_fault, out);
    }

    if (fault == FaultKind::truncated) {
        response.truncate_body_at = out_buffer.size() / 2;
    } else if (fault == FaultKind::malformed) {
        out_buffer.resize(out_buffer.size() / 2);
        out.raw("\"]}{");
    } else if (fault == FaultKind::oversized && out_buffer.size() <= fault_settings.oversize_bytes) {
        // Still valid JSON: trailing whitespace beyond the client's cap.
        std::size_t padding = fault_settings.oversize_bytes + 1 - out_buffer.size();
        out.reserve(padding);
        std::memset(out_buffer.data() + out_buffer.size(), ' ', padding);
        out_buffer.resize(out_buffer.size() + padding);
    }
    if (proxy.call_latency.count() > 0 && backend_calls > 0) {
        // The backend's time: per call when the proxy runs a batch's items one
        // after another, once when it runs them at the same time.
        const auto latency = proxy.call_latency * static_cast<std::int64_t>(proxy.serial_items ? backend_calls : 1);
        std::unique_lock lock(delay_mutex);
        std::stop_token stop = request.stop;
        delay_wake.wait_for(lock, stop, latency, [] { return false; });
    }
    response.external_body = out_buffer.view();
}

std::string Node::Impl::status_json() {
    View v = view();
    OutputBuffer text;
    JsonWriter out(text);
    out.raw("{\"chain\":\"");
    out.raw(is_real() ? "real" : "synthetic");
    out.raw("\",\"head\":");
    out.uint(v.head);
    out.raw(",\"last_irreversible_block_num\":");
    out.uint(v.lib);
    out.raw(",\"head_block_id\":\"");
    out.raw(block_id(v, v.head));
    out.raw("\",\"seed\":");
    out.uint(options.synthetic.seed);
    out.raw(",\"naming\":\"");
    out.raw(options.synthetic.naming == Naming::legacy ? "legacy" : "current");
    out.raw("\",\"pathological_every\":");
    out.uint(options.synthetic.pathological_every);
    out.raw(",\"full_block_every\":");
    out.uint(options.synthetic.full_block_every);
    std::lock_guard lock(mutex);
    out.raw(",\"block_interval_ms\":");
    out.integer(block_interval.count());
    out.raw(",\"lib_lag\":");
    out.uint(lib_lag);
    out.raw(",\"irreversible\":");
    out.boolean(irreversible);
    out.raw(",\"forks\":[");
    for (std::size_t i = 0; i < forks.size(); ++i) {
        if (i > 0) out.put(',');
        out.raw("{\"from\":");
        out.uint(forks[i].from);
        out.raw(",\"salt\":");
        out.uint(forks[i].salt);
        out.put('}');
    }
    out.raw("],\"faults\":{\"rate_per_million\":");
    out.uint(faults.per_million);
    out.raw(",\"kinds\":[");
    for (std::size_t i = 0; i < faults.kinds.size(); ++i) {
        if (i > 0) out.put(',');
        out.plain_string(fault_kind_name(faults.kinds[i]));
    }
    out.raw("],\"seed\":");
    out.uint(faults.seed);
    out.raw(",\"left\":");
    if (faults.count)
        out.uint(faults_left);
    else
        out.null();
    out.raw("},\"rpc_requests\":");
    out.uint(rpc_requests.load());
    out.raw(",\"rpc_in_flight\":");
    out.uint(rpc_in_flight.load());
    out.raw(",\"rpc_in_flight_peak\":");
    out.uint(rpc_in_flight_peak.load());
    out.raw(",\"faults_injected\":");
    out.uint(faults_injected.load());
    out.raw(",\"proxy\":{\"kind\":\"");
    out.raw(proxy_kind_name(options.proxy.kind));
    out.raw("\",\"batch_limit\":");
    out.uint(options.proxy.batch_limit);
    out.raw(",\"batches_refused\":");
    out.uint(batches_refused.load());
    out.raw(",\"cache_hits\":");
    out.uint(answer_cache.hits());
    out.raw(",\"rate_limited\":");
    out.uint(rate_limiter.refused());
    out.raw(",\"rate_limited_before_retry_after\":");
    out.uint(rate_limiter.refused_early());
    out.raw("},\"head_offset\":");
    out.integer(options.head_offset);
    out.raw(",\"history_lag\":");
    out.uint(history_lag.load());
    if (is_real()) {
        const RealChainStats& s = real->stats();
        out.raw(",\"real_chain\":{\"files\":");
        out.uint(s.files);
        out.raw(",\"ops\":");
        out.uint(s.ops);
        out.raw(",\"blocks_with_ops\":");
        out.uint(s.blocks_with_ops);
        out.raw(",\"accounts\":");
        out.uint(s.accounts);
        out.raw(",\"known_block_ids\":");
        out.uint(s.known_block_ids);
        out.raw(",\"full_blocks\":");
        out.uint(s.full_blocks);
        out.raw(",\"body_conflicts\":");
        out.uint(s.body_conflicts);
        out.raw(",\"unplaced_history_entries\":");
        out.uint(s.unplaced_history_entries);
        out.put('}');
    }
    out.put('}');
    return text.str();
}

std::optional<FaultOptions> parse_faults(const json_t* spec, std::string& error) {
    FaultOptions faults;
    if (spec == nullptr || json_is_null(spec)) return faults;
    if (!json_is_object(spec)) {
        error = "faults must be an object or null";
        return std::nullopt;
    }
    const json_t* rate = json_object_get(spec, "rate");
    if (rate != nullptr) {
        double share = json_number_value(rate);
        if (!json_is_number(rate) || share < 0 || share > 1) {
            error = "faults.rate must be a number in [0, 1]";
            return std::nullopt;
        }
        faults.per_million = static_cast<std::uint32_t>(share * 1000000.0 + 0.5);
    }
    const json_t* kinds = json_object_get(spec, "kinds");
    for (std::size_t i = 0; i < json_array_size(kinds); ++i) {
        const json_t* name = json_array_get(kinds, i);
        auto kind = json_is_string(name) ? parse_fault_kind(json_string_value(name)) : std::nullopt;
        if (!kind) {
            error = "unknown fault kind";
            return std::nullopt;
        }
        faults.kinds.push_back(*kind);
    }
    if (const json_t* value = json_object_get(spec, "seed"))
        faults.seed = static_cast<std::uint64_t>(json_integer_value(value));
    if (const json_t* value = json_object_get(spec, "delay_ms"))
        faults.delay = std::chrono::milliseconds(json_integer_value(value));
    if (const json_t* value = json_object_get(spec, "hang_ms"))
        faults.hang = std::chrono::milliseconds(json_integer_value(value));
    if (const json_t* value = json_object_get(spec, "oversize_bytes"))
        faults.oversize_bytes = static_cast<std::size_t>(json_integer_value(value));
    if (const json_t* value = json_object_get(spec, "count"))
        if (!json_is_null(value)) faults.count = static_cast<std::uint64_t>(json_integer_value(value));
    const json_t* methods = json_object_get(spec, "methods");
    for (std::size_t i = 0; i < json_array_size(methods); ++i)
        if (json_is_string(json_array_get(methods, i)))
            faults.methods.emplace_back(json_string_value(json_array_get(methods, i)));
    return faults;
}

void Node::Impl::handle_control(const wallet::HttpRequest& request, wallet::HttpResponse& response) {
    json_error_t parse_error;
    wallet::JsonPtr body = wallet::json_own(json_loadb(request.body.data(), request.body.size(), 0, &parse_error));
    auto refuse = [&](const std::string& message) {
        response.status = 400;
        response.body = "{\"error\":" + escaped(message) + "}";
    };
    if (!body || !json_is_object(body.get())) return refuse("the body must be a JSON object");
    const json_t* spec = body.get();
    std::optional<std::uint32_t> fork_from;
    {
        std::lock_guard lock(mutex);
        if (const json_t* value = json_object_get(spec, "block_interval_ms")) {
            if (!json_is_integer(value) || json_integer_value(value) < 0)
                return refuse("block_interval_ms must be >= 0");
            std::uint32_t head = head_locked();
            epoch = std::chrono::steady_clock::now();
            head_at_epoch = head;
            head_adjustment = 0;
            block_interval = std::chrono::milliseconds(json_integer_value(value));
        }
        if (const json_t* value = json_object_get(spec, "head")) {
            if (!json_is_integer(value) || json_integer_value(value) < 1 || json_integer_value(value) > 0xfffffff0LL)
                return refuse("head must be a block number");
            set_head_locked(static_cast<std::uint32_t>(json_integer_value(value)));
        }
        if (const json_t* value = json_object_get(spec, "advance")) {
            if (!json_is_integer(value) || json_integer_value(value) < 0) return refuse("advance must be >= 0");
            head_adjustment += json_integer_value(value);
        }
        if (const json_t* value = json_object_get(spec, "lib_lag")) {
            if (!json_is_integer(value) || json_integer_value(value) < 0) return refuse("lib_lag must be >= 0");
            lib_lag = static_cast<std::uint32_t>(json_integer_value(value));
        }
        if (const json_t* value = json_object_get(spec, "irreversible")) {
            if (!json_is_boolean(value)) return refuse("irreversible must be a boolean");
            irreversible = json_is_true(value);
        }
        if (const json_t* value = json_object_get(spec, "history_lag")) {
            if (!json_is_integer(value) || json_integer_value(value) < 0) return refuse("history_lag must be >= 0");
            history_lag = static_cast<std::uint32_t>(json_integer_value(value));
        }
        if (const json_t* value = json_object_get(spec, "fork")) {
            if (!json_is_integer(value) || json_integer_value(value) < 1) return refuse("fork must be a depth >= 1");
            std::uint32_t head = head_locked();
            auto depth = static_cast<std::uint32_t>(std::min<json_int_t>(json_integer_value(value), head));
            std::uint32_t from = head - depth + 1;
            std::erase_if(forks, [&](const Fork& fork) { return fork.from >= from; });
            forks.push_back({from, splitmix64(options.synthetic.seed ^ splitmix64(++forks_made))});
            fork_from = from;
        }
        if (const json_t* value = json_object_get(spec, "reset_peak")) {
            if (!json_is_boolean(value)) return refuse("reset_peak must be a boolean");
            if (json_is_true(value)) rpc_in_flight_peak = rpc_in_flight.load();
        }
        if (json_object_get(spec, "faults") != nullptr) {
            std::string error;
            auto parsed = parse_faults(json_object_get(spec, "faults"), error);
            if (!parsed) return refuse(error);
            faults = std::move(*parsed);
            faults_left = faults.count.value_or(0);
            fault_candidates = 0;
        }
    }
    if (fork_from) truncate_history(*fork_from);
    response.body = status_json();
}

std::string Node::Impl::describe() const {
    std::string text = is_real() ? "real-data chain from " + options.fixtures.string() + " (" +
                                       std::to_string(real->stats().ops) + " operations in " +
                                       std::to_string(real->stats().blocks_with_ops) + " blocks)"
                                 : "synthetic chain, seed " + std::to_string(options.synthetic.seed) + ", " +
                                       (options.synthetic.naming == Naming::legacy ? "legacy" : "current") + " naming";
    if (options.proxy.kind != ProxyKind::direct) text += ", behind " + std::string(proxy_kind_name(options.proxy.kind));
    return text;
}

// ---------------------------------------------------------------------------

wallet::Result<std::unique_ptr<Node>> Node::create(NodeOptions options) {
    auto impl = std::make_unique<Impl>(std::move(options));
    Impl& node = *impl;
    std::uint32_t head = node.options.initial_head;
    if (!node.options.fixtures.empty()) {
        auto real = RealChain::load(node.options.fixtures);
        if (!real) return wallet::make_error(real.error());
        node.real = std::move(real).value();
        node.global_properties = wallet::json_own(json_deep_copy(node.real->global_properties()));
        if (head == 0) head = node.real->head();
        node.lib_lag = node.options.lib_lag.value_or(20);
    } else {
        bool legacy = node.options.synthetic.naming == Naming::legacy;
        std::string_view text = legacy ? kLegacyGlobalProperties : kCurrentGlobalProperties;
        json_error_t error;
        wallet::JsonPtr parsed = wallet::json_own(json_loadb(text.data(), text.size(), 0, &error));
        node.global_properties = legacy ? legacy_to_nai("", parsed.get()) : std::move(parsed);
        if (head == 0) head = 1000;
        node.lib_lag = node.options.lib_lag.value_or(1);
        for (std::uint32_t i = 0; i < node.synthetic.account_count(); ++i)
            node.account_index.emplace(node.synthetic.account(i), i);
        if (SyntheticLedger* ledger = node.synthetic.ledger())
            ledger->set_salt_source([&node](std::uint32_t block) { return node.view().salt(block); });
        std::uint32_t window = std::max<std::uint32_t>(node.options.history_blocks, 1);
        node.history.first_block = head > window ? head - window + 1 : 1;
    }
    node.head_adjustment = node.options.head_offset;
    node.history_lag = node.options.history_lag;
    node.irreversible = node.options.irreversible;
    node.block_interval = node.options.block_interval;
    node.head_at_epoch = head;
    node.epoch = std::chrono::steady_clock::now();
    if (node.options.epoch && node.block_interval.count() > 0) {
        // Processes of a pool share the head: move the start back to the common epoch.
        auto since = std::chrono::system_clock::now() - *node.options.epoch;
        if (since.count() > 0) node.epoch -= std::chrono::duration_cast<std::chrono::steady_clock::duration>(since);
    }
    node.faults = node.options.faults;
    node.faults_left = node.faults.count.value_or(0);
    return std::unique_ptr<Node>(new Node(std::move(impl)));
}

Node::Node(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Node::~Node() = default;

void Node::handle(const wallet::HttpRequest& request, wallet::HttpResponse& response) {
    std::string_view path = request.path();
    if (path == "/sim/control") {
        if (request.method != "POST") {
            response.status = 405;
            response.body = "{\"error\":\"POST a JSON object\"}";
            return;
        }
        return impl_->handle_control(request, response);
    }
    if (path == "/sim/status") {
        response.body = impl_->status_json();
        return;
    }
    if (request.method != "POST") {
        response.status = 405;
        response.body = "{\"error\":\"JSON-RPC needs POST\"}";
        return;
    }
    impl_->handle_rpc(request, response);
}

std::string Node::status_json() { return impl_->status_json(); }
std::string Node::describe() const { return impl_->describe(); }

}  // namespace sim
