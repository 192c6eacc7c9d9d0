// The stored balance bytes (wallet/balance_runs.hpp, wallet/balance_state.hpp):
// a run's events and a balance state, decoded from arbitrary bytes. Decoding
// gives an error or values that encode and decode back to themselves.
#include <cstddef>
#include <cstdint>

#include "fuzz_check.hpp"
#include "wallet/balance_runs.hpp"
#include "wallet/balance_state.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto bytes = fuzz::text(data, size);
    if (const auto events = wallet::decode_run(bytes, 1000)) {
        const auto encoded = wallet::encode_run(*events, 1000);
        fuzz::check(encoded.ok(), "a decoded run encodes");
        const auto again = wallet::decode_run(*encoded, 1000);
        fuzz::check(again && *again == *events, "an encoded run decodes to itself");
    }
    if (const auto state = wallet::BalanceState::decode(bytes)) {
        const auto encoded = state->encode();
        fuzz::check(encoded.has_value(), "a decoded state encodes");
        const auto again = wallet::BalanceState::decode(*encoded);
        fuzz::check(again && *again == *state, "an encoded state decodes to itself");
    }
    return 0;
}
