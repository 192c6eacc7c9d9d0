// The validating scanner the node client walks answers with, and the tape the
// decoder reads entries from: they accept what jansson accepts and refuse
// malformed or truncated text; the tape reads the values jansson does.
#include <random>
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

// ---- Tape: accepts and refuses what jansson does, and reads the same values ----

bool jansson_accepts(std::string_view text) {
    json_error_t error;
    JsonPtr value = json_own(json_loadb(text.data(), text.size(), JSON_DECODE_ANY | JSON_ALLOW_NUL, &error));
    return value != nullptr;
}

// The tape's reading of a value equals jansson's tree of it.
void expect_same_value(const json_t* tree, View view, const std::string& where) {
    ASSERT_TRUE(view) << where;
    switch (json_typeof(tree)) {
        case JSON_OBJECT: {
            ASSERT_TRUE(view.is_object()) << where;
            const char* key = nullptr;
            json_t* child = nullptr;
            json_object_foreach(const_cast<json_t*>(tree), key, child) {
                expect_same_value(child, view.member(key), where + "." + key);
            }
            view.for_each_member([&](View name, View) {
                EXPECT_NE(json_object_get(tree, name.string().c_str()), nullptr) << where << "." << name.string();
            });
            break;
        }
        case JSON_ARRAY:
            ASSERT_TRUE(view.is_array()) << where;
            ASSERT_EQ(view.size(), json_array_size(tree)) << where;
            for (std::size_t i = 0; i < json_array_size(tree); ++i) {
                expect_same_value(json_array_get(tree, i), view.element(i), where + "[" + std::to_string(i) + "]");
            }
            break;
        case JSON_STRING:
            ASSERT_TRUE(view.is_string()) << where;
            EXPECT_EQ(view.string(), std::string(json_string_value(tree), json_string_length(tree))) << where;
            EXPECT_TRUE(view.string_equals(std::string(json_string_value(tree), json_string_length(tree)))) << where;
            break;
        case JSON_INTEGER:
            ASSERT_TRUE(view.is_integer()) << where;
            EXPECT_EQ(view.integer(), json_integer_value(tree)) << where;
            break;
        case JSON_REAL: EXPECT_EQ(view.kind(), Kind::Real) << where; break;
        case JSON_TRUE: EXPECT_EQ(view.kind(), Kind::True) << where; break;
        case JSON_FALSE: EXPECT_EQ(view.kind(), Kind::False) << where; break;
        case JSON_NULL: EXPECT_TRUE(view.is_null()) << where; break;
    }
}

void expect_tape_agrees(std::string_view text) {
    auto tape = Tape::parse(text);
    ASSERT_EQ(tape.ok(), jansson_accepts(text)) << text << (tape ? std::string() : " tape: " + tape.error());
    if (!tape) return;
    auto tree = parse(text);
    ASSERT_TRUE(tree);
    expect_same_value(tree->get(), tape->root(), "$");
}

TEST(JsonTape, ReadsEveryFixtureDocumentAsJanssonDoes) {
    int documents = 0;
    for (const auto& path : test::hive_fixture_files()) {
        SCOPED_TRACE(path.string());
        expect_tape_agrees(read_text(path));
        ++documents;
    }
    EXPECT_GT(documents, 300);
}

TEST(JsonTape, AcceptsAndRefusesWhatJanssonDoes) {
    for (const char* text :
         {"", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "[01]", "[1.]", "[.5]", "[1e]", "[-]", "[+1]", "\"a\\x\"", "\"\\u12G4\"",
          "\"tab\there\"", "[tru]", "[nul]", "[1] [2]", "{\"a\":1}}", "[\"a\"\"b\"]", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
          "\"\\ud83d\\ude00\"", "\"a\\u0000b\"", "\"\\u00e9\\/\\b\\f\\n\\r\\t\\\"\\\\\"", "\"\xc3\xa9\"", "\"\xc3\"", "\"\xc3(\"",
          "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xe0\x80\x80\"", "\"\xc0\xaf\"", "\"\xf0\x9f\x98\x80\"", "\"\x7f\"", "\"\xff\"",
          "9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809", "1e400", "-1e400",
          "1e-400", "0.5", "-0", "{\"a\":1,\"a\":[2]}", "{\"k\\u0065y\":\"v\"}", " [ ] ", "{}", "null", "true", "false"}) {
        SCOPED_TRACE(text);
        expect_tape_agrees(text);
    }
}

TEST(JsonTape, AgreesWithJanssonOnMutatedEntries) {
    const std::string entry =
        R"({"trx_id":"ab","block":7,"virtual_op":true,"timestamp":"2016-01-01T00:00:00",)"
        R"("op":{"type":"transfer_operation","value":{"memo":"a\"b\\c\u00e9 \ud83d\ude00 é","amount":{"amount":"1","precision":3}}},)"
        R"("n":[-1.5e3,0,true,false,null,[],{}]})";
    std::mt19937 random(15);
    const std::string alphabet = "{}[]\",:\\u0123456789abcdefeE.-+ tnrl\xc3\xa9\xed\xf4\x80\x7f";
    for (int round = 0; round < 3000; ++round) {
        std::string text = entry;
        for (int edits = 1 + static_cast<int>(random() % 3); edits > 0; --edits) {
            const std::size_t at = random() % text.size();
            text[at] = alphabet[random() % alphabet.size()];
        }
        expect_tape_agrees(text);
        if (HasFatalFailure()) return;
    }
}

TEST(JsonTape, NamesAMissingMemberAndAnotherKindByNoValue) {
    auto tape = Tape::parse(R"({"a":[1,"x"],"b":{"c":null}})");
    ASSERT_TRUE(tape);
    const View root = tape->root();
    EXPECT_FALSE(root.member("z"));
    EXPECT_FALSE(root.member("a").member("c"));
    EXPECT_FALSE(root.member("a").element(2));
    EXPECT_TRUE(root.member("b").member("c").is_null());
    EXPECT_EQ(root.member("a").element(1).string(), "x");
    EXPECT_EQ(root.member("a").element(1).integer(), 0);
    EXPECT_EQ(root.member("a").element(0).string(), "");
    EXPECT_EQ(root.size(), 2u);
}

}  // namespace
}  // namespace wallet::json
