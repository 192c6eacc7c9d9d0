// Test helpers over the real node data in t/fixtures/hive: list the JSON
// documents, load them, and visit every value with the key it sits under.
#pragma once

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <jansson.h>

#include "wallet/handles.hpp"

namespace wallet::test {

inline std::filesystem::path hive_fixtures_dir() { return WALLET_HIVE_FIXTURES_DIR; }

inline bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// Every node-data JSON document under fixtures/hive, sorted: the *.json files
// and the steemd-era *.json.pat result files. The top-level manifest.json is
// left out: it indexes the data (requests of negative tests included) and is
// not node output.
inline std::vector<std::filesystem::path> hive_fixture_files() {
    std::vector<std::filesystem::path> files;
    const auto manifest = hive_fixtures_dir() / "manifest.json";
    for (const auto& entry : std::filesystem::recursive_directory_iterator(hive_fixtures_dir())) {
        const std::string name = entry.path().filename().string();
        if (entry.path() == manifest) continue;
        if (entry.is_regular_file() && (ends_with(name, ".json") || ends_with(name, ".json.pat"))) {
            files.push_back(entry.path());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

inline JsonPtr load_json_file(const std::filesystem::path& path) {
    json_error_t error;
    JsonPtr document = json_own(json_load_file(path.c_str(), JSON_DECODE_ANY, &error));
    EXPECT_TRUE(document) << path << ':' << error.line << ": " << error.text;
    return document;
}

// One value met during a walk: its object key ("" for array elements and the
// root) and the object holding it (nullptr unless the parent is an object).
struct JsonVisit {
    const json_t* value;
    std::string_view key;
    const json_t* parent_object;
};

// Depth-first over every value, parents before children.
inline void walk_json(const json_t* value, const std::function<void(const JsonVisit&)>& visit, std::string_view key = {},
                      const json_t* parent_object = nullptr) {
    visit(JsonVisit{value, key, parent_object});
    if (json_is_object(value)) {
        const char* child_key = nullptr;
        json_t* child = nullptr;
        // The jansson macro takes non-const pointers; iteration does not modify.
        json_t* object = const_cast<json_t*>(value);
        json_object_foreach(object, child_key, child) { walk_json(child, visit, child_key, value); }
    } else if (json_is_array(value)) {
        std::size_t index = 0;
        json_t* child = nullptr;
        json_array_foreach(value, index, child) { walk_json(child, visit); }
    }
}

inline std::string json_string_of(const json_t* value) {
    return json_is_string(value) ? std::string(json_string_value(value), json_string_length(value)) : std::string();
}

}  // namespace wallet::test
