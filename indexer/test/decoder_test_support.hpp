// Helpers of the decoder tests: fixture loading and event comparison.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hive_fixtures.hpp"
#include "wallet/decoder.hpp"
#include "wallet/json_util.hpp"

namespace wallet::test {

inline JsonPtr parse_json(const char* text) {
    auto parsed = json::parse(text);
    EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error()) << "\n" << text;
    return parsed ? std::move(parsed).value() : JsonPtr();
}

// A fixture by its path under t/fixtures/hive.
inline JsonPtr load_fixture(const std::string& relative_path) { return load_json_file(hive_fixtures_dir() / relative_path); }

// The entry of a get_account_history item [seq, entry] (or a bare entry).
inline json_t* unwrap_history_item(json_t* item) { return json_is_array(item) ? json_array_get(item, 1) : item; }

inline json_t* account_history_entry(json_t* history, std::size_t index) {
    return unwrap_history_item(json_array_get(history, index));
}

// One side ("account_history_api" or "condenser_api") of a testnet pair.
inline json_t* testnet_pair(json_t* document, std::size_t index, const char* form) {
    return unwrap_history_item(json_object_get(json_array_get(json_object_get(document, "pairs"), index), form));
}

inline std::vector<WalletEvent> decode_entry_ok(json_t* entry, const AssetTable& table) {
    EXPECT_NE(entry, nullptr);
    if (entry == nullptr) return {};
    auto events = decode_entry(entry, table);
    EXPECT_TRUE(events) << (events ? "" : events.error());
    return events ? std::move(events).value() : std::vector<WalletEvent>{};
}

// Every field of every event against a JSON array of expected objects.
inline void expect_events(const std::vector<WalletEvent>& events, const char* expected_json) {
    JsonPtr expected = parse_json(expected_json);
    ASSERT_TRUE(json_is_array(expected.get()));
    ASSERT_EQ(events.size(), json_array_size(expected.get()));
    for (std::size_t i = 0; i < events.size(); ++i) {
        JsonPtr actual = event_to_json(events[i]);
        const json_t* wanted = json_array_get(expected.get(), i);
        EXPECT_TRUE(json_equal(actual.get(), wanted)) << "event " << i << "\n  actual:   " << json::dump_compact(actual.get())
                                                      << "\n  expected: " << json::dump_compact(wanted);
    }
}

}  // namespace wallet::test
