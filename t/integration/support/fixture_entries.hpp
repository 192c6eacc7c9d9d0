// The real node responses under t/fixtures/hive hold operations in several
// shapes (get_ops_in_block, get_account_history, get_block_range, ...); what
// tests take from them is each history entry: an object with "op" and "block".
#pragma once

#include <jansson.h>

#include <functional>

#include "harness/harness.hpp"
#include "wallet/handles.hpp"

namespace fixture_test {

// Calls `on_entry` for every history entry of every JSON file under `dir`.
inline void for_each_history_entry(const harness::fs::path& dir, const std::function<void(json_t* entry)>& on_entry) {
    std::function<void(json_t*)> visit = [&](json_t* value) {
        if (json_is_object(value)) {
            if (json_object_get(value, "op") != nullptr && json_object_get(value, "block") != nullptr) {
                on_entry(value);
                return;
            }
            const char* key = nullptr;
            json_t* child = nullptr;
            json_object_foreach(value, key, child) { visit(child); }
        } else if (json_is_array(value)) {
            std::size_t index = 0;
            json_t* child = nullptr;
            json_array_foreach(value, index, child) { visit(child); }
        }
    };
    for (const auto& file : harness::fs::recursive_directory_iterator(dir)) {
        if (!file.is_regular_file() || file.path().extension() != ".json") continue;
        json_error_t error;
        wallet::JsonPtr document = wallet::json_own(json_load_file(file.path().c_str(), JSON_DECODE_ANY, &error));
        if (document) visit(document.get());
    }
}

}  // namespace fixture_test
