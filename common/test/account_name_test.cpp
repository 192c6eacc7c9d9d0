#include "wallet/account_name.hpp"

#include <array>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "hive_fixtures.hpp"

namespace wallet {
namespace {

TEST(AccountName, AcceptsValidNames) {
    for (const char* name : {"abc", "gtg", "steemit", "blocktrades", "smooth.witness", "a-b", "a1b", "abc1", "abc-def",
                             "a-b-c", "abc.def.ghi", "abc.de1", "a12.b-3", "aaaaaaaaaaaaaaaa", "abc.defghijklmno",
                             "initminer", "null", "temp", "hive.fund"}) {
        EXPECT_TRUE(is_valid_account_name(name)) << '"' << name << '"';
    }
}

TEST(AccountName, RejectsInvalidNames) {
    const std::array invalid = {
        "",                   // empty
        "a",                  // too short
        "ab",                 // too short
        "abcdefghijklmnopq",  // 17 characters
        "abc.defghijklmnop",  // 17 characters with a dot
        "Abc",                // uppercase start
        "abC",                // uppercase end
        "aBc",                // uppercase inside
        "1abc",               // digit start
        "-abc",               // dash start
        "abc-",               // dash end
        "ab--c",              // double dash
        "a.bcd",              // short first segment
        "abc.de",             // short last segment
        "abc.",               // empty last segment
        ".abc",               // empty first segment
        "abc..def",           // empty middle segment
        "abc.1de",            // segment starting with a digit
        "abc.-de",            // segment starting with a dash
        "abc.de-",            // segment ending with a dash
        "abc_d",              // underscore
        "abc d",              // space
        " abc",               // leading space
        "abc\n",              // newline
        "abc@d",              // other punctuation
        "@abc",               // a mention, not a name
        "abc/def",            // slash
        "ab\xc3\xa9",         // unicode é
        "\xd0\xb0\xd0\xb1\xd0\xb2",  // Cyrillic
        "twenty_letters_wordd",      // negative-test name of the node's own tests
        "abc.def.",           // trailing dot
        "...",                // only dots
        "a-.bcd",             // segment ending with a dash before a dot
    };
    static_assert(invalid.size() >= 30);
    for (const char* name : invalid) {
        EXPECT_FALSE(is_valid_account_name(name)) << '"' << name << '"';
    }
    // An embedded NUL is not part of any name.
    EXPECT_FALSE(is_valid_account_name(std::string_view("abc\0def", 7)));
}

// Fields whose string values are account names in node output.
const std::set<std::string_view, std::less<>> kAccountFields = {
    "from",    "to",        "account",   "author",      "curator",      "voter",          "producer",
    "owner",   "delegator", "delegatee", "benefactor",  "from_account", "to_account",     "comment_author",
    "creator", "new_account_name",       "witness"};

TEST(AccountNameFixtures, EveryAccountInTheFixturesIsValid) {
    int checked = 0;
    std::set<std::string> distinct;
    for (const auto& path : test::hive_fixture_files()) {
        JsonPtr document = test::load_json_file(path);
        ASSERT_TRUE(document);
        test::walk_json(document.get(), [&](const test::JsonVisit& visit) {
            if (!json_is_string(visit.value) || visit.parent_object == nullptr) return;
            const std::string value = test::json_string_of(visit.value);
            bool is_account = kAccountFields.count(visit.key) > 0;
            // "name" is an account only in account objects (get_accounts-like
            // results); elsewhere it is a tag or a key name.
            if (visit.key == "name") is_account = json_object_get(visit.parent_object, "memo_key") != nullptr;
            if (!is_account) return;
            // An empty transfer_to_vesting `to` means "the sender"; a missing
            // post comes back as a default object with empty author/permlink.
            if (value.empty() && visit.key == "to") return;
            if (value.empty() && visit.key == "author" &&
                test::json_string_of(json_object_get(visit.parent_object, "permlink")).empty()) {
                return;
            }
            ++checked;
            distinct.insert(value);
            EXPECT_TRUE(is_valid_account_name(value)) << path << " ." << visit.key << " = \"" << value << '"';
        });
    }
    std::printf("[ accounts ] %d account-name values (%zu distinct) are valid\n", checked, distinct.size());
    EXPECT_GT(checked, 20000);
}

}  // namespace
}  // namespace wallet
