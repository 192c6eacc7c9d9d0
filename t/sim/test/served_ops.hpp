// The simulator tests' view of a synthetic block as the node serves it.
#pragma once

#include <string>
#include <vector>

#include "json_writer.hpp"
#include "synthetic_chain.hpp"

namespace sim::test {

// The block's ops as the node serves them (emitted ones only), one JSON text per op.
inline std::vector<std::string> serve(const SyntheticChain& chain, std::uint32_t num, Form form, std::uint64_t salt = 0) {
    SynBlock block;
    chain.generate(num, salt, block);
    std::vector<std::string> out;
    EnvelopePrefix prefix;
    for (const SynOp& op : block.ops) {
        if (!chain.emitted(op)) continue;
        OutputBuffer buffer;
        JsonWriter writer(buffer);
        chain.envelope_prefix(block, op.trx_in_block, prefix);
        chain.write_envelope(writer, block, op, form, prefix);
        out.push_back(buffer.str());
    }
    return out;
}

}  // namespace sim::test
