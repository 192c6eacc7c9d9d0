// Small value types describing the chain, shared by the node client, the
// store and the daemons.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "wallet/timestamp.hpp"

namespace wallet {

// A block by number, id and time: what fork detection compares.
struct BlockRef {
    std::int64_t num = 0;
    std::string id;  // 40 hex digits; the first 8 are the block number
    Timestamp time;
    friend bool operator==(const BlockRef&, const BlockRef&) = default;
};

// One observation of the node's head (get_dynamic_global_properties).
struct ChainHead {
    std::int64_t head_block = 0;
    std::string head_block_id;
    Timestamp head_time;
    // nullopt when the node reports no last irreversible block (absent, null or 0).
    std::optional<std::int64_t> last_irreversible;
};

}  // namespace wallet
