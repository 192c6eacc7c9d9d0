// The real-data chain: every mainnet operation, header and block id found in
// the fixtures directory (t/fixtures/hive), placed at its real block.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol.hpp"
#include "wallet/handles.hpp"
#include "wallet/result.hpp"

namespace sim {

struct RealOp {
    std::string trx_id;
    std::uint32_t block = 0;
    std::uint32_t trx_in_block = 0;
    std::uint32_t op_in_trx = 0;
    bool virtual_op = false;
    std::string timestamp;
    int type_id = -1;
    std::string type;         // without "_operation"
    wallet::JsonPtr value;    // the body in NAI form
    std::uint64_t order = 0;  // emission order among ops of the same (trx_in_block, op_in_trx)
};

// One entry of an account's history: its per-account sequence number and the op.
struct HistoryEntry {
    std::uint64_t seq;
    std::uint32_t op_index;
};

struct RealChainStats {
    std::size_t files = 0;
    std::size_t ops = 0;
    std::size_t blocks_with_ops = 0;
    std::size_t accounts = 0;
    std::size_t known_block_ids = 0;
    std::size_t full_blocks = 0;
    // The same operation read from two files with different bodies.
    std::size_t body_conflicts = 0;
    // Operations that fit nowhere in an account's known sequence numbers.
    std::size_t unplaced_history_entries = 0;
};

class RealChain {
public:
    // Reads manifest.json and the mainnet files it lists.
    static wallet::Result<std::unique_ptr<RealChain>> load(const std::filesystem::path& fixtures_dir);

    // The head of the fixtures' get_dynamic_global_properties (5,000,000).
    std::uint32_t head() const { return head_; }
    const RealChainStats& stats() const { return stats_; }

    std::span<const RealOp> ops_of(std::uint32_t block) const;
    const std::vector<RealOp>& all_ops() const { return ops_; }
    // Ids and headers the fixtures know; blocks without are synthesized by the caller.
    std::optional<std::string> known_id(std::uint32_t block) const;
    // The block's time: known from fixtures, else 3-second steps from the nearest known block.
    std::int64_t time_of(std::uint32_t block) const;
    std::string witness_of(std::uint32_t block) const;
    std::optional<std::string> merkle_root_of(std::uint32_t block) const;
    // A whole block as block_api served it (NAI form), when the fixtures have it.
    const json_t* full_block(std::uint32_t block) const;
    // database_api.get_dynamic_global_properties at the fixtures' head (NAI form).
    const json_t* global_properties() const { return global_properties_.get(); }

    // The account's history, ascending by sequence number.
    std::span<const HistoryEntry> history_of(const std::string& account) const;

private:
    RealChain() = default;

    std::uint32_t head_ = 0;
    RealChainStats stats_;
    std::vector<RealOp> ops_;              // sorted by (block, trx_in_block, op_in_trx, order)
    std::vector<std::uint32_t> blocks_;    // block numbers that have ops, ascending
    std::vector<std::uint32_t> first_op_;  // index of each block's first op in ops_, plus an end marker
    std::map<std::uint32_t, std::string> ids_;
    std::map<std::uint32_t, std::int64_t> times_;
    std::map<std::uint32_t, std::string> witnesses_;
    std::map<std::uint32_t, std::string> merkle_roots_;
    std::map<std::uint32_t, wallet::JsonPtr> full_blocks_;
    std::vector<std::string> witness_names_;  // for blocks of unknown producer
    wallet::JsonPtr global_properties_;
    std::unordered_map<std::string, std::vector<HistoryEntry>> histories_;

    friend class RealChainLoader;
};

}  // namespace sim
