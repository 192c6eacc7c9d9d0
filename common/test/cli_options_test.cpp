// The command-line options every program shares.
#include "wallet/cli_options.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace {

TEST(CliOptions, HelpAndVersionAreAnsweredAndNothingElse) {
    int helps = 0;
    std::ostringstream out;
    auto answer = [&](const std::string& arg) {
        return wallet::answer_help_or_version(arg, "wallet-x", [&] { ++helps; }, out);
    };
    EXPECT_TRUE(answer("--help"));
    EXPECT_TRUE(answer("-h"));
    EXPECT_EQ(helps, 2);
    EXPECT_EQ(out.str(), "");
    EXPECT_TRUE(answer("--version"));
    EXPECT_EQ(out.str(), std::string("wallet-x ") + WALLET_VERSION + "\n");
    for (const char* other : {"--helpful", "-v", "--version=1", "help", "", "--dry-run"}) {
        EXPECT_FALSE(answer(other)) << other;
    }
    EXPECT_EQ(helps, 2);
    EXPECT_EQ(out.str(), std::string("wallet-x ") + WALLET_VERSION + "\n");
}

TEST(CliOptions, NumberOptionTakesOnlyAPositiveInteger) {
    EXPECT_EQ(wallet::number_option("--step-blocks=100", "--step-blocks="), 100);
    for (const char* bad : {"--step-blocks=", "--step-blocks=0", "--step-blocks=-3", "--step-blocks=1x", "--steps=100"}) {
        EXPECT_EQ(wallet::number_option(bad, "--step-blocks="), std::nullopt) << bad;
    }
}

}  // namespace
