// The validating scanner the node client walks answers with: it accepts what
// jansson accepts and refuses malformed or truncated text.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hive_fixtures.hpp"
#include "wallet/json_scan.hpp"
#include "wallet/json_util.hpp"

namespace wallet::json {
namespace {

std::string read_text(const std::filesystem::path& path) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    EXPECT_NE(file, nullptr) << path;
    std::string text;
    char buffer[65536];
    while (file != nullptr) {
        const std::size_t n = std::fread(buffer, 1, sizeof buffer, file);
        if (n == 0) break;
        text.append(buffer, n);
    }
    if (file != nullptr) std::fclose(file);
    return text;
}

bool scans_whole(std::string_view text) {
    Scanner scanner(text);
    const std::string_view value = scanner.next_value();
    return !scanner.failed() && !value.empty() && scanner.at_end();
}

TEST(JsonScan, AcceptsEveryFixtureDocumentWhole) {
    int documents = 0;
    for (const auto& path : test::hive_fixture_files()) {
        const std::string text = read_text(path);
        EXPECT_TRUE(scans_whole(text)) << path;
        ++documents;
    }
    EXPECT_GT(documents, 300);
}

TEST(JsonScan, RefusesEveryTruncationOfADocument) {
    const std::string text =
        R"({"ops":[{"trx_id":"ab","block":7,"virtual_op":true,"timestamp":"2016-01-01T00:00:00",)"
        R"("op":{"type":"transfer_operation","value":{"memo":"a\"b\\c\u00e9","amount":{"amount":"1","precision":3}}},)"
        R"("n":[-1.5e3,0,true,false,null,[],{}]}]})";
    ASSERT_TRUE(scans_whole(text));
    ASSERT_TRUE(parse(text));
    for (std::size_t cut = 1; cut < text.size(); ++cut) {
        const std::string prefix = text.substr(0, cut);
        EXPECT_FALSE(scans_whole(prefix)) << prefix;
        EXPECT_FALSE(parse(prefix)) << prefix;  // jansson agrees
    }
}

TEST(JsonScan, RefusesWhatJanssonRefuses) {
    for (const char* text : {"", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "[01]", "[1.]", "[.5]", "[1e]", "[-]", "[+1]",
                             "\"a\\x\"", "\"\\u12G4\"", "\"tab\there\"", "[tru]", "[nul]", "[1] [2]", "{\"a\":1}}", "[\"a\"\"b\"]"}) {
        EXPECT_FALSE(scans_whole(text)) << text;
        EXPECT_FALSE(parse(text)) << text;
    }
}

TEST(JsonScan, ScanNumberStopsAfterTheNumberOrAtTheBadCharacter) {
    struct Case {
        const char* text;
        bool ok;
        std::size_t end;
    };
    for (const Case& c : {Case{"0,", true, 1}, Case{"-12.5e+3]", true, 8}, Case{"01", true, 1}, Case{"1E9", true, 3},
                          Case{"-", false, 1}, Case{"1.", false, 2}, Case{"2e+", false, 3}, Case{"-x", false, 1}}) {
        std::size_t pos = 0;
        EXPECT_EQ(scan_number(c.text, pos), c.ok) << c.text;
        EXPECT_EQ(pos, c.end) << c.text;
    }
}

TEST(JsonScan, WalksElementsAndMembers) {
    std::vector<std::string> seen;
    auto elements = for_each_element(R"( [ 1 , "two" , {"x":[3]} ] )", [&](std::string_view element) {
        seen.emplace_back(element);
        return true;
    });
    ASSERT_TRUE(elements) << elements.error();
    EXPECT_EQ(seen, (std::vector<std::string>{"1", "\"two\"", "{\"x\":[3]}"}));
    seen.clear();
    auto members = for_each_member(R"({"block": "12345678901234567", "op" : ["vote", {}], "e\"k": null})",
                                   [&](std::string_view key, std::string_view value) {
                                       seen.push_back(std::string(key) + "=" + std::string(value));
                                       return true;
                                   });
    ASSERT_TRUE(members) << members.error();
    EXPECT_EQ(seen, (std::vector<std::string>{"block=\"12345678901234567\"", "op=[\"vote\", {}]", "e\\\"k=null"}));
    EXPECT_EQ(integer_value("\"12345678901234567\"").value(), 12345678901234567);
    EXPECT_EQ(integer_value("4294967295").value(), 4294967295);
    EXPECT_FALSE(integer_value("1.5"));
    EXPECT_FALSE(for_each_element("[1,2", [](std::string_view) { return true; }));
    EXPECT_FALSE(for_each_member("{\"a\":1} x", [](std::string_view, std::string_view) { return true; }));
}

}  // namespace
}  // namespace wallet::json
