#include "tail.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

#include "wallet/balance_snapshots.hpp"
#include "wallet/bulk_load.hpp"
#include "wallet/decoder.hpp"
#include "wallet/json_scan.hpp"
#include "wallet/log.hpp"
#include "wallet/loggable_url.hpp"

namespace wallet::indexer {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kMinRetryDelay{250};
constexpr milliseconds kMaxRetryDelay{5000};
constexpr std::chrono::seconds kProgressLogInterval{10};
constexpr std::chrono::seconds kRepeatProblemLogInterval{60};
constexpr std::chrono::seconds kChangedProblemLogInterval{10};

std::string per_second(std::int64_t count, double seconds) {
    return std::to_string(seconds > 0 ? static_cast<std::int64_t>(static_cast<double>(count) / seconds) : count);
}

}  // namespace

Result<TailIndexer> TailIndexer::create(TailOptions options, Liveness& liveness, SystemdNotifier& notifier, std::stop_token stop) {
    NodeClientOptions node;
    node.url = options.settings.chain.rpc_url;
    node.timeout = milliseconds(options.settings.chain.rpc_timeout_ms);
    node.max_response_bytes = options.settings.chain.max_response_bytes;
    node.every_block_rewarded = options.settings.chain.every_block_rewarded;
    node.stop = stop;
    auto client = NodeClient::create(node);
    if (!client) return make_error(client.error());
    // Its own connection for reading ahead while a batch is written.
    auto prefetch_client = NodeClient::create(std::move(node));
    if (!prefetch_client) return make_error(prefetch_client.error());
    return TailIndexer(std::move(options), std::move(client).value(), std::move(prefetch_client).value(), liveness, notifier,
                       std::move(stop));
}

TailIndexer::TailIndexer(TailOptions options, NodeClient node, NodeClient prefetch_node, Liveness& liveness,
                         SystemdNotifier& notifier, std::stop_token stop)
    : options_(std::move(options)),
      node_(std::move(node)),
      prefetch_node_(std::move(prefetch_node)),
      liveness_(liveness),
      notifier_(notifier),
      stop_(std::move(stop)) {}

TailIndexer::~TailIndexer() { discard_prefetch(); }

int TailIndexer::run() {
    const auto& s = options_.settings.indexer;
    log_info("starting: node " + loggable_url(options_.settings.chain.rpc_url) + ", indexing up to the " +
             (s.target_irreversible ? "last irreversible block" : "head block") + " minus " + std::to_string(s.trail_blocks) +
             ", forks reconciled up to " + std::to_string(s.max_fork_depth) + " blocks deep, batches of up to " +
             std::to_string(s.max_batch_blocks) + " blocks");
    while (!stop_.stop_requested()) {
        notifier_.keep_alive();
        Step result = step();
        // The snapshot pass follows the store; while it has periods to do the loop does not sleep.
        if ((result == Step::Progressed || result == Step::Idle) && advance_snapshots()) result = Step::Progressed;
        liveness_.set_node_stats(combined_node_stats());
        report_liveness();
        switch (result) {
            case Step::Progressed:
                retry_delay_ = milliseconds(0);
                break;
            case Step::Idle:
                retry_delay_ = milliseconds(0);
                interruptible_sleep(milliseconds(s.poll_interval_ms), stop_);
                break;
            case Step::Retry:
                // Exponential from the poll interval (at most kMinRetryDelay) up to kMaxRetryDelay.
                retry_delay_ = std::clamp(retry_delay_ * 2, std::min(kMinRetryDelay, milliseconds(s.poll_interval_ms)),
                                          kMaxRetryDelay);
                interruptible_sleep(retry_delay_, stop_);
                break;
            case Step::Refused:
                discard_prefetch();
                notifier_.notify("STATUS=refused: a bulk load of the store is unfinished");
                return kExitConfiguration;
            case Step::Halted:
                discard_prefetch();
                notifier_.notify("STATUS=halted: fork deeper than INDEXER_MAX_FORK_DEPTH");
                // Without a liveness endpoint there is nobody to tell: exit.
                while (s.health_addr && !stop_.stop_requested()) {
                    notifier_.keep_alive();
                    interruptible_sleep(milliseconds(1000), stop_);
                }
                log_error("exiting: indexing halted");
                return kExitHalted;
        }
    }
    discard_prefetch();
    log_info("stopped" + (checkpoint_ ? " at block " + std::to_string(checkpoint_->num) : std::string()));
    return kExitStopped;
}

NodeClientStats TailIndexer::combined_node_stats() const {
    NodeClientStats total = node_.stats();
    total.calls += prefetch_stats_.calls;
    total.attempts += prefetch_stats_.attempts;
    total.failed_calls += prefetch_stats_.failed_calls;
    total.bytes_received += prefetch_stats_.bytes_received;
    for (std::size_t kind = 0; kind < std::size(total.failures); ++kind) total.failures[kind] += prefetch_stats_.failures[kind];
    return total;
}

std::int64_t TailIndexer::target_of(const ChainHead& head) const {
    const auto& s = options_.settings.indexer;
    const std::int64_t base = s.target_irreversible ? head.last_irreversible.value_or(0) : head.head_block;
    return base - s.trail_blocks;
}

store::BalanceRules TailIndexer::balance_rules() const {
    return {options_.assets, HardforkSchedule::named(options_.settings.chain.hardforks).value_or(HardforkSchedule::mainnet())};
}

bool TailIndexer::advance_snapshots() {
    if (!store_ || !store_->healthy()) return false;
    auto done = store::advance_balance_snapshots(store_->connection(), snapshot_ids_, balance_rules(),
                                                 options_.settings.chain.balance_snapshot_blocks, last_irreversible_);
    if (!done) {
        log_warning("balance snapshots: " + done.error());
        return false;
    }
    return done->advanced;
}

TailIndexer::Step TailIndexer::step() {
    if (!ensure_store()) return refused_ ? Step::Refused : Step::Retry;
    auto head = node_.get_dynamic_global_properties();
    if (!head) return node_problem(head.error());
    liveness_.record_head(*head);
    last_irreversible_ = head->last_irreversible.value_or(0);
    if (auto saved = store_->record_observation(*head); !saved) return database_problem(saved.error());
    read_monitored_state();
    if (!head->last_irreversible) {
        // Without it neither target is safe to trust: do not advance.
        report_problem("no_lib", "the node reports no last irreversible block; not advancing");
        return Step::Idle;
    }
    const std::int64_t first_block = std::max<std::int64_t>(options_.settings.indexer.start_block, 1);
    const std::int64_t indexed = checkpoint_ ? checkpoint_->num : first_block - 1;
    if (checkpoint_ && head->head_block < indexed) {
        // A node behind the index: lagging (its blocks match ours), or on a
        // shorter fork (they do not), which reconcile_fork tells apart.
        return reconcile_fork(*head);
    }
    const std::int64_t target = target_of(*head);
    if (target <= indexed) {
        // Caught up; the indexed tip must still be on the node's chain.
        if (checkpoint_) {
            auto tip = node_.get_block_refs(indexed, indexed);
            if (!tip) return node_problem(tip.error());
            if (tip->blocks.front().id != checkpoint_->id) return reconcile_fork(*head);
        }
        report_recovery();
        liveness_.record_caught_up(indexed);
        report_caught_up(*head);
        return Step::Idle;
    }
    std::int64_t last = std::min(target, indexed + options_.settings.indexer.max_batch_blocks);
    if (prefetched(indexed + 1) && prefetch_last_ <= target) last = prefetch_last_;
    return index_range(indexed + 1, last, *head, std::nullopt);
}

bool TailIndexer::ensure_store() {
    if (store_ && store_->healthy()) return true;
    store_.reset();
    auto opened = EventStore::connect(options_.settings.db.indexer_url, /*apply_schema_migrations=*/true);
    if (!opened) {
        liveness_.record_database_error();
        report_problem("database", "database unavailable: " + opened.error());
        return false;
    }
    // The connection joins the store's writers: a bulk load started later
    // refuses while it is open, and one that is unfinished refuses us.
    auto bulk_load = bulk_load::join_writers(opened.value().connection());
    if (!bulk_load) {
        liveness_.record_database_error();
        report_problem("database", "database unavailable: " + bulk_load.error());
        return false;
    }
    if (*bulk_load) {
        log_error("refusing to start: " + **bulk_load);
        refused_ = true;
        return false;
    }
    auto checkpoint = opened.value().checkpoint();
    if (!checkpoint) {
        liveness_.record_database_error();
        report_problem("database", "database unavailable: " + checkpoint.error());
        return false;
    }
    store_.emplace(std::move(opened).value());
    store_->set_balance_rules(balance_rules());
    checkpoint_ = *checkpoint;
    const std::int64_t first_block = std::max<std::int64_t>(options_.settings.indexer.start_block, 1);
    liveness_.set_indexed(checkpoint_ ? checkpoint_->num : first_block - 1);
    const std::string position = checkpoint_ ? "resuming after block " + std::to_string(checkpoint_->num)
                                             : "fresh database: starting at block " + std::to_string(first_block);
    if (!ready_notified_) {
        log_info("database ready (schema migrated); " + position);
        notifier_.notify("READY=1");
        ready_notified_ = true;
    } else {
        log_info("database connection restored; " + position);
    }
    return true;
}

// The operations of [first, last]; a range whose answer exceeds
// CHAIN_RPC_MAX_RESPONSE_BYTES (a pathological payout block among ordinary
// ones) is read in halves, down to single blocks.
Result<std::vector<BlockOps>> fetch_ops(NodeClient& node, std::int64_t first, std::int64_t last, OpsForm form,
                                        std::int64_t known_to) {
    auto blocks = node.get_ops_in_blocks(first, last, form, known_to);
    if (blocks || first == last || node.last_failure() != NodeFailure::Oversized) return blocks;
    const std::int64_t middle = first + (last - first) / 2;
    log_info("the answer for blocks " + std::to_string(first) + ".." + std::to_string(last) +
             " exceeds CHAIN_RPC_MAX_RESPONSE_BYTES; reading them in halves");
    auto lower = fetch_ops(node, first, middle, form, known_to);
    if (!lower) return lower;
    auto upper = fetch_ops(node, middle + 1, last, form, known_to);
    if (!upper) return upper;
    for (auto& block : upper.value()) lower.value().push_back(std::move(block));
    return lower;
}

// The first operation of `block` whose transaction id is not the id the
// block lists at its trx_in_block: operations of another fork's block (as a
// proxy's cache may still hold them); nullopt when all match.
std::optional<std::string> foreign_operation(const BlockOps& block, const std::vector<std::string>& transaction_ids) {
    for (const RawEntry& entry : block.entries) {
        json::Scanner s(entry.text);
        std::optional<std::int64_t> trx_in_block;
        std::string_view trx_id;
        if (!s.expect('{') || s.consume('}')) continue;
        do {
            std::string_view key;
            if (!s.read_string(key) || !s.expect(':')) break;
            if (key == "trx_in_block") {
                if (auto number = json::integer_value(s.next_value())) trx_in_block = *number;
            } else if (key == "trx_id") {
                s.read_string(trx_id);
            } else {
                s.next_value();
            }
        } while (!s.failed() && s.consume(','));
        if (!trx_in_block || *trx_in_block < 0 || *trx_in_block >= static_cast<std::int64_t>(transaction_ids.size())) continue;
        if (transaction_ids[static_cast<std::size_t>(*trx_in_block)] != trx_id) return std::string(trx_id);
    }
    return std::nullopt;
}

FetchOutcome fetch_range(NodeClient& node, std::int64_t first, std::int64_t last, OpsForm form, bool reversible,
                         std::int64_t known_to, const AssetTable& assets) {
    FetchOutcome outcome;
    auto refs = node.get_block_refs(first, last);
    if (!refs) return outcome.fail("node", "node: " + refs.error());
    auto blocks = fetch_ops(node, first, last, form, known_to);
    if (!blocks) return outcome.fail("node", "node: " + blocks.error());
    if (reversible) {
        // Reversible blocks may have been replaced while their operations were read.
        auto again = node.get_block_refs(first, last);
        if (!again) return outcome.fail("node", "node: " + again.error());
        if (again->parent_id != refs->parent_id || again->blocks != refs->blocks) {
            return outcome.fail("chain_moving", "blocks " + std::to_string(first) + ".." + std::to_string(last) +
                                                    " changed while being read; reading them again");
        }
        // The ids come from calls no cache shares; the operations may not.
        for (std::size_t i = 0; i < blocks->size() && i < refs->transaction_ids.size(); ++i) {
            if (auto foreign = foreign_operation((*blocks)[i], refs->transaction_ids[i])) {
                return outcome.fail("chain_moving", "block " + std::to_string((*blocks)[i].block_num) +
                                                        ": an operation of transaction " + *foreign +
                                                        ", not in the block (another fork's, cached); reading it again");
            }
        }
    }
    FetchedRange range{first, last, std::move(refs).value(), {}};
    for (auto& block : *blocks) {
        auto events = decode_block_entries(block.entries, assets);
        if (!events) {
            return outcome.fail("decode", "cannot decode block " + std::to_string(block.block_num) + ": " + events.error());
        }
        for (auto& event : *events) range.events.push_back(std::move(event));
    }
    outcome.range = std::move(range);
    return outcome;
}

void TailIndexer::start_prefetch(std::int64_t first, std::int64_t last, std::int64_t known_to) {
    discard_prefetch();
    if (stop_.stop_requested()) return;
    prefetch_first_ = first;
    prefetch_last_ = last;
    NodeClient* node = &prefetch_node_;
    const AssetTable* assets = &options_.assets;
    const OpsForm form = ops_form();
    prefetch_ = std::async(std::launch::async, [node, assets, form, first, last, known_to] {
        FetchOutcome outcome = fetch_range(*node, first, last, form, /*reversible=*/false, known_to, *assets);
        outcome.stats = node->stats();
        return outcome;
    });
}

void TailIndexer::discard_prefetch() {
    if (!prefetch_.valid()) return;
    prefetch_stats_ = prefetch_.get().stats;
}

bool TailIndexer::prefetched(std::int64_t first) const { return prefetch_.valid() && prefetch_first_ == first; }

std::int64_t TailIndexer::known_to(const ChainHead& head) const {
    // The highest block the node itself vouches for in the form asked.
    return ops_form() == OpsForm::Condenser ? head.last_irreversible.value_or(0) : head.head_block;
}

OpsForm TailIndexer::ops_form() const {
    return options_.settings.indexer.target_irreversible ? OpsForm::Condenser : OpsForm::AccountHistory;
}

TailIndexer::Step TailIndexer::index_range(std::int64_t first, std::int64_t last, const ChainHead& head,
                                           std::optional<BlockRef> fork_point) {
    const auto& s = options_.settings.indexer;
    const std::int64_t lib = head.last_irreversible.value_or(0);
    FetchOutcome fetched;
    if (!fork_point && prefetched(first) && prefetch_last_ == last) {
        fetched = prefetch_.get();
        prefetch_stats_ = fetched.stats;
    } else {
        discard_prefetch();
        fetched = fetch_range(node_, first, last, ops_form(), last > lib, known_to(head), options_.assets);
    }
    if (!fetched.range) {
        if (stop_.stop_requested()) return Step::Retry;
        if (fetched.kind == "chain_moving") {
            log_info(fetched.message);
            return Step::Retry;
        }
        report_problem(fetched.kind, fetched.message);
        return Step::Retry;
    }
    FetchedRange& range = *fetched.range;
    // The new blocks must continue the stored chain.
    std::optional<std::string> expected_parent;
    if (fork_point) {
        expected_parent = fork_point->id;
    } else if (checkpoint_ && checkpoint_->num == first - 1) {
        expected_parent = checkpoint_->id;
    }
    if (expected_parent && range.refs.parent_id != *expected_parent) {
        discard_prefetch();
        if (fork_point) {
            report_problem("fork", "the chain changed again while reconciling the fork at block " + std::to_string(fork_point->num));
            return Step::Retry;
        }
        return reconcile_fork(head);
    }
    // While this batch is written, the next one is read: only irreversible
    // blocks, which no fork can change before they are committed.
    const std::int64_t target = target_of(head);
    const std::int64_t next_last = std::min({target, lib, last + s.max_batch_blocks});
    if (!fork_point && next_last > last) start_prefetch(last + 1, next_last, known_to(head));

    EventStore::Batch batch;
    batch.events = std::move(range.events);
    batch.blocks = std::move(range.refs.blocks);
    batch.checkpoint = batch.blocks.back();
    batch.keep_block_ids = s.max_fork_depth + 1;
    if (fork_point) batch.rewind_above = fork_point->num;
    auto counts = store_->commit_batch(batch, options_.write_method);
    if (!counts) {
        discard_prefetch();
        return database_problem(counts.error());
    }

    checkpoint_ = batch.checkpoint;
    report_recovery();
    const bool at_target = last >= target;
    liveness_.record_batch(checkpoint_->num, last - first + 1, counts->offered, counts->inserted, at_target,
                           counts->balance_undecodable);
    if (fork_point) {
        log_info("fork reconciled: blocks " + std::to_string(first) + ".." + std::to_string(last) + " re-indexed");
    }
    report_progress(last - first + 1, counts->offered, head);
    if (at_target) report_caught_up(head);
    return Step::Progressed;
}

TailIndexer::Step TailIndexer::reconcile_fork(const ChainHead& head) {
    discard_prefetch();
    const auto& s = options_.settings.indexer;
    const std::int64_t tip = checkpoint_->num;
    const std::int64_t low = std::max<std::int64_t>(1, tip - s.max_fork_depth);
    // The node may be behind the index: only its blocks up to its head compare.
    const std::int64_t top = std::min(tip, head.head_block);
    if (top < low) {
        report_problem("node_behind", "the node's head block " + std::to_string(head.head_block) +
                                          " is more than INDEXER_MAX_FORK_DEPTH below the indexed block " +
                                          std::to_string(tip) + "; waiting for it");
        return Step::Idle;
    }
    auto stored = store_->block_ids_from(low);
    if (!stored) return database_problem(stored.error());
    auto theirs = node_.get_block_refs(low, top);
    if (!theirs) return node_problem(theirs.error());

    // The highest block both chains share.
    std::optional<BlockRef> fork_point;
    for (auto it = stored->rbegin(); it != stored->rend() && !fork_point; ++it) {
        if (it->num > top || it->num < low) continue;
        if (theirs->blocks[static_cast<std::size_t>(it->num - low)].id == it->id) fork_point = *it;
    }
    // None shared, but indexing began inside the window: the fork point is
    // just below the first indexed block.
    if (!fork_point && !stored->empty() && stored->front().num > low && stored->front().num - 1 <= top) {
        fork_point = theirs->blocks[static_cast<std::size_t>(stored->front().num - 1 - low)];
    }
    if (!fork_point) {
        const std::string reason = "fork deeper than INDEXER_MAX_FORK_DEPTH=" + std::to_string(s.max_fork_depth) +
                                   ": no block of " + std::to_string(low) + ".." + std::to_string(top) +
                                   " matches the node; indexing halted at block " + std::to_string(tip) +
                                   " (rows near it may belong to the abandoned chain: re-index from an earlier block)";
        log_error(reason);
        liveness_.halt(reason);
        return Step::Halted;
    }
    if (fork_point->num == top) {
        if (top < tip) {
            // Every block the node has matches: it is behind, not forked.
            report_problem("node_behind", "the node's head block " + std::to_string(head.head_block) +
                                              " is below the indexed block " + std::to_string(tip) + "; waiting for it");
            return Step::Idle;
        }
        return Step::Progressed;  // the chain switched back meanwhile: nothing to undo
    }
    const std::int64_t depth = tip - fork_point->num;
    log_warning("fork: the index's blocks " + std::to_string(fork_point->num + 1) + ".." + std::to_string(tip) +
                " are not on the node's chain; fork point " + std::to_string(fork_point->num) + " (depth " +
                std::to_string(depth) + "); re-indexing from block " + std::to_string(fork_point->num + 1));
    liveness_.record_fork(depth);

    const std::int64_t target = target_of(head);
    if (target <= fork_point->num) {
        // Nothing of the new chain to index yet: only remove the abandoned blocks.
        EventStore::Batch rewind;
        rewind.rewind_above = fork_point->num;
        rewind.checkpoint = *fork_point;
        rewind.keep_block_ids = s.max_fork_depth + 1;
        auto counts = store_->commit_batch(rewind, options_.write_method);
        if (!counts) return database_problem(counts.error());
        checkpoint_ = *fork_point;
        liveness_.record_batch(checkpoint_->num, 0, 0, 0, false);
        log_info("fork reconciled: blocks above " + std::to_string(fork_point->num) + " removed");
        return Step::Progressed;
    }
    // Re-index at least up to the old tip, so the index never shows fewer blocks.
    const std::int64_t last = std::min(target, fork_point->num + std::max(s.max_batch_blocks, depth));
    return index_range(fork_point->num + 1, last, head, fork_point);
}

TailIndexer::Step TailIndexer::node_problem(const std::string& message) {
    if (stop_.stop_requested()) return Step::Retry;
    report_problem("node", "node: " + message);
    return Step::Retry;
}

TailIndexer::Step TailIndexer::database_problem(const std::string& message) {
    discard_prefetch();
    liveness_.record_database_error();
    report_problem("database", "database: " + message);
    // Reconnect (and re-read the checkpoint: a failed commit may have landed).
    store_.reset();
    return Step::Retry;
}

void TailIndexer::report_problem(const std::string& kind, const std::string& message) {
    liveness_.record_problem(message);
    caught_up_logged_ = false;
    // One line per event: a new kind of problem at once, a changed message of
    // the same kind after a while, an unchanged one as a periodic reminder.
    const auto now = Clock::now();
    const auto since = now - last_problem_logged_;
    if (kind != last_problem_kind_ || (message != last_problem_ && since >= kChangedProblemLogInterval) ||
        since >= kRepeatProblemLogInterval) {
        log_warning(message);
        last_problem_logged_ = now;
    }
    last_problem_kind_ = kind;
    last_problem_ = message;
}

void TailIndexer::report_recovery() {
    if (last_problem_.empty()) return;
    log_info("recovered from: " + last_problem_);
    last_problem_.clear();
    last_problem_kind_.clear();
}

void TailIndexer::read_monitored_state() {
    // Two small reads, often enough for alerts that wait minutes.
    constexpr auto kMonitorInterval = std::chrono::seconds(15);
    const auto now = Clock::now();
    if (monitored_at_ && now - *monitored_at_ < kMonitorInterval) return;
    monitored_at_ = now;
    // Monitoring only: a failure leaves the last values and never stops
    // indexing (a broken connection shows in the next statement that matters).
    if (auto state = store_->monitored_state()) liveness_.set_monitored_state(std::move(state).value());
}

void TailIndexer::report_liveness() {
    const std::string reason = liveness_.unhealthy_reason();
    if (!reason.empty() && !stalled_) {
        log_warning("liveness unhealthy: " + reason);
        notifier_.notify("STATUS=unhealthy: " + reason);
    } else if (reason.empty() && stalled_) {
        log_info("liveness healthy again");
        notifier_.notify("STATUS=healthy");
    }
    stalled_ = !reason.empty();
}

void TailIndexer::report_caught_up(const ChainHead& head) {
    if (caught_up_logged_) return;
    caught_up_logged_ = true;
    log_info("caught up at block " + std::to_string(checkpoint_ ? checkpoint_->num : 0) + " (head " +
             std::to_string(head.head_block) + ", last irreversible " + std::to_string(head.last_irreversible.value_or(0)) +
             "); following");
}

void TailIndexer::report_progress(std::int64_t blocks, std::int64_t events, const ChainHead& head) {
    window_blocks_ += blocks;
    window_events_ += events;
    const auto now = Clock::now();
    if (now - window_start_ < kProgressLogInterval) return;
    const double seconds = std::chrono::duration<double>(now - window_start_).count();
    const std::int64_t indexed = checkpoint_->num;
    log_info("indexed to block " + std::to_string(indexed) + " (head " + std::to_string(head.head_block) + ", lag " +
             std::to_string(head.head_block - indexed) + " blocks): " + per_second(window_blocks_, seconds) + " blocks/s, " +
             per_second(window_events_, seconds) + " events/s");
    window_start_ = now;
    window_blocks_ = 0;
    window_events_ = 0;
}

}  // namespace wallet::indexer
