// The migration policy (docs/deploy.md, "Upgrade"): during an upgrade the
// previous release's module answers on the migrated schema until nginx
// reloads, so a migration after the first packaged release only adds. One that
// drops, renames or retypes something must say, in a `-- not additive:` line,
// why the previous module still works (it never read that object) or which
// earlier release stopped reading it.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "wallet/migrations.hpp"

namespace {

// The last migration written before the policy (and before the package).
constexpr int kLastMigrationBeforePolicy = 16;

// The SQL without its comments ("--" to the end of the line).
std::string without_comments(const std::string& sql) {
    static const std::regex comment("--[^\n]*");
    return std::regex_replace(sql, comment, "");
}

// The statements of `sql` that take away or change something a reader may use.
std::vector<std::string> non_additive_statements(const std::string& sql) {
    static const std::regex taking(
        R"(\b(DROP\s+(TABLE|VIEW|MATERIALIZED\s+VIEW|FUNCTION|COLUMN|TYPE|SCHEMA)\b|RENAME\b|ALTER\s+COLUMN\s+\w+\s+(SET\s+DATA\s+)?TYPE\b))",
        std::regex::icase | std::regex::ECMAScript);
    std::vector<std::string> found;
    const std::string code = without_comments(sql);
    for (std::sregex_iterator it(code.begin(), code.end(), taking), end; it != end; ++it) found.push_back(it->str());
    return found;
}

bool says_why(const std::string& sql) { return sql.find("-- not additive:") != std::string::npos; }

}  // namespace

TEST(MigrationPolicy, EveryMigrationAfterTheFirstReleaseIsAdditiveOrSaysWhy) {
    for (const auto& m : wallet::embedded_migrations()) {
        if (m.version <= kLastMigrationBeforePolicy) continue;
        const auto taking = non_additive_statements(m.sql);
        EXPECT_TRUE(taking.empty() || says_why(m.sql))
            << "migration " << m.version << " (" << m.name << ") " << taking.front()
            << "... without a \"-- not additive:\" line: the previous release's module answers on the new schema "
               "until nginx reloads (docs/deploy.md, \"Upgrade\")";
    }
}

// The check finds what the pre-policy migrations took away (the compact
// store's rewrites, a renamed and a dropped function), and no comment
// counts as a statement.
TEST(MigrationPolicy, TheCheckFindsTheNonAdditiveMigrationsOfBeforeThePolicy) {
    std::vector<int> flagged;
    for (const auto& m : wallet::embedded_migrations()) {
        if (m.version <= kLastMigrationBeforePolicy && !non_additive_statements(m.sql).empty()) {
            flagged.push_back(m.version);
        }
    }
    EXPECT_EQ(flagged, (std::vector<int>{4, 7, 9, 14, 16}));
    EXPECT_TRUE(non_additive_statements("-- DROP TABLE wallet_events\nCREATE INDEX i ON t (c);").empty());
    EXPECT_EQ(non_additive_statements("ALTER TABLE t ALTER COLUMN c TYPE bigint;").size(), 1u);
    EXPECT_EQ(non_additive_statements("ALTER TABLE t RENAME COLUMN a TO b; DROP VIEW v;").size(), 2u);
}
