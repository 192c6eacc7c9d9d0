// Less JSON to parse: most of a block's operations (votes, custom_json,
// comments) never become wallet events, yet parsing them is most of the
// loader's CPU. Before a get_ops_in_block answer is parsed, the body of every
// condenser-form operation (["type", {...}]) whose type is not a wallet
// operation is replaced by {}. Every entry stays, with its envelope (block,
// trx_in_block, op_in_trx, virtual_op, timestamp, trx_id) and type, so the
// node client's checks, block_seq and the virtual-op numbering are exactly as
// before; wallet operations keep their bytes (the stored payload).
#pragma once

#include <string>

namespace wallet::backfill {

// Rewrites the JSON text in place. Text it cannot follow (not JSON) is left
// as it is, for the parser to refuse.
void thin_non_wallet_operations(std::string& body);

}  // namespace wallet::backfill
