// The node-response decoder on one block's get_ops_in_block result, in
// either form: the condenser list ([entry, ...], legacy asset strings) or
// the account_history_api object ({"ops": [entry, ...]}, NAI assets).
// Both ways a block reaches the one decoder run: from jansson values
// (decode_block, and decode_entry per entry as the account-history fallback
// does; each serialized, then read through a json::Tape) and from the node's
// text as the daemons read it (json_scan + scan_entry + decode_block_entries).
// Where both succeed they must give the same events.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <jansson.h>

#include "fuzz_check.hpp"
#include "wallet/decoder.hpp"
#include "wallet/json_scan.hpp"
#include "wallet/json_util.hpp"

namespace {

// The entry list of a result text, located by the scanner.
std::string_view scanned_list(std::string_view result) {
    std::string_view list = result;
    const std::size_t first = result.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && result[first] == '{') {
        list = {};
        auto members = wallet::json::for_each_member(result, [&](std::string_view key, std::string_view value) {
            if (key == "ops") list = value;
            return true;
        });
        if (!members) return {};
    }
    return list;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view result = fuzz::text(data, size);
    static const wallet::AssetTable assets = wallet::AssetTable::mainnet();

    std::optional<std::vector<wallet::WalletEvent>> parsed;
    if (auto document = wallet::json::parse(result)) {
        json_t* list = json_is_object(document->get()) ? json_object_get(document->get(), "ops") : document->get();
        if (auto events = wallet::decode_block(list, assets)) parsed = std::move(*events);
        if (json_is_array(list)) {
            for (std::size_t i = 0; i < json_array_size(list); ++i) (void)wallet::decode_entry(json_array_get(list, i), assets);
        }
    }

    std::optional<std::vector<wallet::WalletEvent>> located;
    std::vector<wallet::RawEntry> entries;
    bool scanned = true;
    auto elements = wallet::json::for_each_element(scanned_list(result), [&](std::string_view entry_text) {
        auto entry = wallet::scan_entry(entry_text);
        if (entry) entries.push_back(*entry);
        scanned = entry.ok();
        return scanned;
    });
    if (elements && scanned) {
        if (auto events = wallet::decode_block_entries(entries, assets)) located = std::move(*events);
    }

    if (parsed && located) {
        fuzz::check(parsed->size() == located->size(), "both decoders give as many events");
        for (std::size_t i = 0; i < parsed->size(); ++i) {
            fuzz::check(wallet::same_event_fields((*parsed)[i], (*located)[i]), "both decoders give the same events");
        }
    }
    return 0;
}
