// JSON string quoting (wallet::json::write_quoted / append_quoted): every
// byte that JSON text may not hold raw is escaped, wherever it stands
// relative to the 16-byte blocks the scanner reads, and nothing else changes.
#include <array>
#include <random>
#include <vector>
#include <string>

#include <gtest/gtest.h>

#include "wallet/json_util.hpp"

namespace {

// The expected form, one byte at a time.
std::string reference_quoted(std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "\"";
    for (const char raw : text) {
        const auto c = static_cast<unsigned char>(raw);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    out += "\\u00";
                    out += kHex[c >> 4];
                    out += kHex[c & 15];
                } else {
                    out += raw;
                }
        }
    }
    out += '"';
    return out;
}

std::string written_quoted(std::string_view text) {
    std::string out(wallet::json::quoted_capacity(text.size()), '\0');
    out.resize(static_cast<std::size_t>(wallet::json::write_quoted(out.data(), text) - out.data()));
    return out;
}

}  // namespace

TEST(JsonQuoted, EveryByteValueAtEveryPositionOfTwoBlocks) {
    for (int byte = 0; byte < 256; ++byte) {
        for (std::size_t position = 0; position < 40; ++position) {
            std::string text(40, 'a');
            text[position] = static_cast<char>(byte);
            const std::string expected = reference_quoted(text);
            ASSERT_EQ(written_quoted(text), expected) << "byte " << byte << " at " << position;
            std::string appended = "x";
            wallet::json::append_quoted(appended, text);
            ASSERT_EQ(appended, "x" + expected) << "byte " << byte << " at " << position;
        }
    }
}

// Short texts and tails are read in overlapping blocks: every length, one
// or two bytes to escape anywhere.
TEST(JsonQuoted, EscapesAtEveryPositionOfEveryShortLength) {
    constexpr std::array<char, 5> kSpecial = {'"', '\\', '\n', '\x7f', '\0'};
    for (std::size_t length = 1; length <= 40; ++length) {
        for (std::size_t position = 0; position < length; ++position) {
            for (const char special : kSpecial) {
                std::string text(length, 'a');
                text[position] = special;
                ASSERT_EQ(written_quoted(text), reference_quoted(text)) << length << " at " << position;
                text[length - 1 - (length - 1 - position) / 2] = '"';
                ASSERT_EQ(written_quoted(text), reference_quoted(text)) << length << " at " << position << " and later";
                ASSERT_EQ(wallet::json::plain_run(text), position) << length << " at " << position;
            }
        }
        ASSERT_EQ(wallet::json::plain_run(std::string(length, 'a')), length);
    }
}

// plain_ascii_run stops where plain_run does, and at bytes from 0x80 up,
// which plain_run passes.
TEST(JsonQuoted, AsciiRunStopsAtHighBytesTooAtEveryPosition) {
    constexpr std::array<char, 5> kStops = {'"', '\x7f', '\x1f', '\x80', '\xff'};
    for (std::size_t length = 1; length <= 40; ++length) {
        for (std::size_t position = 0; position < length; ++position) {
            for (const char stop : kStops) {
                std::string text(length, 'a');
                text[position] = stop;
                const std::size_t later = length - 1 - (length - 1 - position) / 2;
                if (later > position) text[later] = '\xc3';
                ASSERT_EQ(wallet::json::plain_ascii_run(text), position) << length << " at " << position;
                if (static_cast<unsigned char>(stop) < 0x80) {
                    ASSERT_EQ(wallet::json::plain_run(text), position) << length << " at " << position;
                }
            }
        }
        ASSERT_EQ(wallet::json::plain_ascii_run(std::string(length, 'a')), length);
        ASSERT_EQ(wallet::json::plain_run(std::string(length, '\xe9')), length);
    }
}

TEST(JsonQuoted, RandomTextsOfEveryLength) {
    std::mt19937 rng(20261122);
    // Mostly plain text with the occasional byte to escape, as memos are.
    std::uniform_int_distribution<int> kind(0, 19);
    std::uniform_int_distribution<int> any(0, 255);
    std::uniform_int_distribution<int> printable(0x20, 0x7e);
    for (std::size_t length = 0; length < 200; ++length) {
        for (int sample = 0; sample < 20; ++sample) {
            std::string text;
            for (std::size_t i = 0; i < length; ++i) {
                text += static_cast<char>(kind(rng) == 0 ? any(rng) : printable(rng));
            }
            ASSERT_EQ(written_quoted(text), reference_quoted(text)) << "length " << length;
            ASSERT_EQ(wallet::json::quoted(text), reference_quoted(text)) << "length " << length;
        }
    }
}

TEST(JsonQuoted, EmptyAndMultibyteText) {
    EXPECT_EQ(written_quoted(""), "\"\"");
    // UTF-8 passes through untouched.
    EXPECT_EQ(written_quoted("żółw \xe2\x82\xac"), "\"żółw \xe2\x82\xac\"");
    EXPECT_EQ(written_quoted(std::string_view("a\0b", 3)), "\"a\\u0000b\"");
}

// json::parse builds plain node text itself and leaves the rest to jansson:
// either way the tree (types, values, member order) and the errors are
// jansson's own.
TEST(JsonParse, SameTreeAsJansson) {
    const std::vector<std::string> texts = {
        R"({"trx_id":"00ab","block":5000000,"trx_in_block":3,"virtual_op":true,"op":["transfer",{"amount":"1.000 HIVE","memo":""}]})",
        R"( [ 1 , -2 , 0 , -0, 123456789012345678, 1234567890123456789, 1.5, 2e3, true, false, null, {}, [] ] )",
        R"({"a":1,"a":2,"b":{"c":[{"d":"x"}]}})",
        R"({"memo":"tab\tand \"quote\" and \u00e9"})",
        "{\"memo\":\"caf\xc3\xa9\"}",
        R"({"nul":"a\u0000b"})",
        "\"plain\"",
        "42",
    };
    for (const auto& text : texts) {
        SCOPED_TRACE(text);
        auto ours = wallet::json::parse(text);
        ASSERT_TRUE(ours.ok()) << ours.error();
        json_error_t error;
        wallet::JsonPtr theirs(json_loadb(text.data(), text.size(), JSON_DECODE_ANY | JSON_ALLOW_NUL, &error));
        ASSERT_TRUE(theirs);
        EXPECT_TRUE(json_equal(ours->get(), theirs.get()));
        EXPECT_EQ(wallet::json::dump_compact(ours->get()), wallet::json::dump_compact(theirs.get()));
    }
    for (const std::string text : {"", "{", "[1,]", "{\"a\" 1}", "tru", "01", "\"a\tb\"", "[1] x", "{\"a\":1}}", "\"\xff\""}) {
        SCOPED_TRACE(text);
        EXPECT_FALSE(wallet::json::parse(text).ok());
    }
}
