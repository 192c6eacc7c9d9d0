#include "node_pool.hpp"

#include <algorithm>

#include "wallet/log.hpp"
#include "wallet/loggable_url.hpp"

namespace wallet::backfill {

NodePool::NodePool(NodePoolOptions options) : options_(std::move(options)), last_success_(Clock::now()) {
    for (const auto& url : options_.urls) {
        State state;
        state.health.url = loggable_url(url);
        nodes_.push_back(std::move(state));
    }
}

NodePool::Pick NodePool::pick(std::size_t preferred) const {
    std::lock_guard lock(mutex_);
    const auto now = Clock::now();
    Pick result{std::nullopt, Clock::time_point::max()};
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const std::size_t node = (preferred + i) % nodes_.size();
        if (nodes_[node].avoid_until <= now) {
            result.node = node;
            return result;
        }
        result.retry_at = std::min(result.retry_at, nodes_[node].avoid_until);
    }
    return result;
}

void NodePool::report_success(std::size_t node, std::uint64_t blocks) {
    std::lock_guard lock(mutex_);
    auto& state = nodes_[node];
    ++state.health.requests;
    state.health.blocks += blocks;
    if (state.consecutive_failures > 0) {
        log_info("node " + state.health.url + " answers again");
        state.consecutive_failures = 0;
    }
    last_success_ = Clock::now();
}

std::optional<std::uint64_t> NodePool::report_failure(std::size_t node, NodeFailure kind, const std::string& message,
                                                      Clock::time_point not_before) {
    std::lock_guard lock(mutex_);
    auto& state = nodes_[node];
    last_error_ = state.health.url + ": " + message;
    ++state.health.requests;
    ++state.health.failures;
    ++state.health.failures_by_kind[static_cast<int>(kind)];
    ++state.unlogged_failures;
    // 1 s, 2 s, 4 s ... after consecutive failures: a flaky node keeps a
    // share of the load, a dead one is asked about once a minute.
    auto avoid = options_.first_avoid;
    for (int i = 0; i < state.consecutive_failures && avoid < options_.max_avoid; ++i) avoid *= 2;
    ++state.consecutive_failures;
    const auto now = Clock::now();
    state.avoid_until = std::max({state.avoid_until, now + std::min(avoid, options_.max_avoid), not_before});
    if (now - state.last_logged < options_.log_interval) return std::nullopt;
    state.last_logged = now;
    return std::exchange(state.unlogged_failures, 0);
}

std::optional<std::int64_t> NodePool::known_lib(std::size_t node) const {
    std::lock_guard lock(mutex_);
    return nodes_[node].lib;
}

bool NodePool::lib_recent(std::size_t node) const {
    constexpr std::chrono::seconds kLibRecent{3};  // one block interval
    std::lock_guard lock(mutex_);
    return Clock::now() - nodes_[node].lib_checked < kLibRecent;
}

void NodePool::record_lib(std::size_t node, std::int64_t lib) {
    std::lock_guard lock(mutex_);
    nodes_[node].lib = lib;
    nodes_[node].lib_checked = Clock::now();
}

std::string NodePool::last_error() const {
    std::lock_guard lock(mutex_);
    return last_error_;
}

NodePool::Clock::time_point NodePool::last_success() const {
    std::lock_guard lock(mutex_);
    return last_success_;
}

std::vector<NodeHealth> NodePool::health() const {
    std::lock_guard lock(mutex_);
    std::vector<NodeHealth> out;
    for (const auto& state : nodes_) out.push_back(state.health);
    return out;
}

Result<PoolClient> PoolClient::create(NodePool& pool, std::size_t first_node, std::stop_token stop) {
    std::vector<NodeClient> clients;
    for (const auto& url : pool.options().urls) {
        NodeClientOptions options;
        options.url = url;
        options.timeout = pool.options().timeout;
        options.max_response_bytes = pool.options().max_response_bytes;
        options.max_attempts = 1;  // the pool retries, on another node
        options.every_block_rewarded = pool.options().every_block_rewarded;
        options.stop = stop;
        auto client = NodeClient::create(std::move(options));
        if (!client) return make_error(client.error());
        clients.push_back(std::move(client).value());
    }
    return PoolClient(pool, std::move(clients), first_node, std::move(stop));
}

PoolClient::PoolClient(NodePool& pool, std::vector<NodeClient> clients, std::size_t first_node, std::stop_token stop)
    : pool_(&pool), clients_(std::move(clients)), next_node_(first_node % clients_.size()), stop_(std::move(stop)) {}

template <typename T, typename Call>
Result<T> PoolClient::on_some_node(const std::string& what, Call call) {
    std::size_t passed = 0;  // nodes in a row that cannot serve the request yet
    for (;;) {
        if (stop_.stop_requested()) return make_error(what + ": stopped");
        if (NodePool::Clock::now() - pool_->last_success() > pool_->options().give_up_after) {
            return make_error(what + ": no node of the pool answered for " +
                              std::to_string(pool_->options().give_up_after.count()) + " ms; last error: " + pool_->last_error());
        }
        const auto pick = pool_->pick(next_node_);
        if (!pick.node) {
            const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(pick.retry_at - NodePool::Clock::now());
            interruptible_sleep(std::clamp(wait, std::chrono::milliseconds(1), std::chrono::milliseconds(1000)), stop_);
            continue;
        }
        const std::size_t node = *pick.node;
        next_node_ = (node + 1) % clients_.size();  // the next request goes to the next node
        NodeClient& client = clients_[node];
        auto outcome = call(node, client);
        if (!outcome) {
            if (++passed >= clients_.size()) {
                // No node has these blocks yet: wait for one to catch up.
                passed = 0;
                interruptible_sleep(std::chrono::milliseconds(1000), stop_);
            }
            continue;
        }
        passed = 0;
        auto& [result, blocks] = *outcome;
        if (result) {
            pool_->report_success(node, blocks);
            return result;
        }
        const NodeFailure kind = client.last_failure();
        if (kind == NodeFailure::Stopped || stop_.stop_requested()) return make_error(what + ": stopped");
        if (auto failures = pool_->report_failure(node, kind, result.error(), client.not_before())) {
            log_warning("node " + loggable_url(client_url(node)) + " failed " + std::to_string(*failures) +
                        " request(s), avoiding it for a while; last: " + result.error());
        }
        if (kind == NodeFailure::Oversized) return result;  // the caller may ask for less
    }
}

std::string PoolClient::client_url(std::size_t node) const { return pool_->options().urls[node]; }

Result<std::vector<BlockOps>> PoolClient::get_ops_in_blocks(std::int64_t first, std::int64_t last) {
    const std::string what = "get_ops_in_block " + std::to_string(first) + ".." + std::to_string(last);
    using Outcome = std::optional<std::pair<Result<std::vector<BlockOps>>, std::uint64_t>>;
    for (std::size_t oversized = 0;; ++oversized) {
        NodeFailure failure = NodeFailure::None;
        auto blocks = on_some_node<std::vector<BlockOps>>(what, [&](std::size_t node, NodeClient& client) -> Outcome {
            auto lib = pool_->known_lib(node);
            if ((!lib || *lib < last) && !pool_->lib_recent(node)) {
                auto head = client.get_dynamic_global_properties();
                if (!head) {
                    failure = client.last_failure();
                    return std::pair(Result<std::vector<BlockOps>>(make_error(head.error())), std::uint64_t{0});
                }
                lib = head->last_irreversible.value_or(0);
                pool_->record_lib(node, *lib);
            }
            if (!lib || *lib < last) return std::nullopt;  // not irreversible on this node yet
            auto answer = client.get_ops_in_blocks(first, last, OpsForm::Condenser, *lib);
            failure = answer ? NodeFailure::None : client.last_failure();
            return std::pair(std::move(answer), static_cast<std::uint64_t>(last - first + 1));
        });
        if (blocks || failure != NodeFailure::Oversized) return blocks;
        if (first == last) {
            // One block cannot be split: another node, until every node refused it.
            if (oversized + 1 < clients_.size()) continue;
            return blocks;
        }
        // Too large for one answer: two halves.
        const std::int64_t middle = first + (last - first) / 2;
        auto low = get_ops_in_blocks(first, middle);
        if (!low) return low;
        auto high = get_ops_in_blocks(middle + 1, last);
        if (!high) return high;
        for (auto& block : high.value()) low.value().push_back(std::move(block));
        return low;
    }
}

Result<std::int64_t> PoolClient::highest_lib() {
    const auto started = NodePool::Clock::now();
    for (;;) {
        std::optional<std::int64_t> highest;
        std::string errors;
        for (std::size_t node = 0; node < clients_.size(); ++node) {
            auto head = clients_[node].get_dynamic_global_properties();
            if (!head) {
                errors += (errors.empty() ? "" : "; ") + loggable_url(client_url(node)) + ": " + head.error();
                continue;
            }
            const std::int64_t lib = head->last_irreversible.value_or(0);
            pool_->record_lib(node, lib);
            highest = std::max(highest.value_or(0), lib);
        }
        if (highest) return *highest;
        if (stop_.stop_requested()) return make_error("stopped");
        if (NodePool::Clock::now() - started > pool_->options().give_up_after) return make_error("no node answered: " + errors);
        interruptible_sleep(std::chrono::milliseconds(1000), stop_);
    }
}

}  // namespace wallet::backfill
