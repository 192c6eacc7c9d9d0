// The page statements return binary results (pg_binary.hpp): numbers, times
// and amounts must decode to exactly what PostgreSQL itself prints, for every
// shape NUMERIC can take, and a page must read the same whichever format the
// rows came in.
#include <libpq-fe.h>

#include "pg_binary.hpp"
#include "support/api_support.hpp"
#include "wallet/pg.hpp"

using namespace api_test;
namespace pg_binary = wallet::api::pg_binary;

namespace {

// Each value of `values_sql` (one column `v`) as text, and in binary decoded.
struct Decoded {
    std::string text;
    std::string decoded;
};

std::vector<Decoded> numerics_both_ways(PGconn* conn, const std::string& values_sql) {
    const std::string sql = "SELECT v, v::text FROM (" + values_sql + ") AS t(v)";
    wallet::PgResultPtr rows(PQexecParams(conn, sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 1));
    EXPECT_EQ(PQresultStatus(rows.get()), PGRES_TUPLES_OK) << PQerrorMessage(conn);
    std::vector<Decoded> out;
    for (int row = 0; row < PQntuples(rows.get()); ++row) {
        const std::string_view bytes(PQgetvalue(rows.get(), row, 0), static_cast<std::size_t>(PQgetlength(rows.get(), row, 0)));
        char text[256];
        const char* end = pg_binary::write_numeric(bytes, text, sizeof text);
        out.push_back({PQgetvalue(rows.get(), row, 1), end ? std::string(text, static_cast<std::size_t>(end - text)) : std::string("<not decoded>")});
    }
    return out;
}

}  // namespace

TEST(ApiBinary, NumericsDecodeExactlyAsPostgresPrintsThem) {
    harness::PostgresServer pg;
    const auto settings = pg.provision();
    auto conn = wallet::pg::connect(settings.db.api_url);
    ASSERT_TRUE(conn) << conn.error();

    // Hand-picked shapes: zero, signs, groups cut by the scale, leading and
    // trailing zero groups, weights far from the point, and the specials.
    const auto picked = numerics_both_ways(conn->get(),
        "VALUES ('0'::numeric), ('0.000000'), ('-0.000001'), ('44.472000'), ('1234.567891'), ('-1234.5'),"
        " ('10000'), ('100000000.000001'), ('0.00001'), ('0.0000000000001'), ('99999999999999999999.999999'),"
        " ('123456789012345678901234.123456'), ('1e30'), ('-1e-20'), ('5'), ('0.1'), ('1.10'),"
        " ('NaN'), ('Infinity'), ('-Infinity')");
    ASSERT_EQ(picked.size(), 20u);
    for (const auto& [text, decoded] : picked) EXPECT_EQ(decoded, text);

    // The stored type: every amount the chain can carry at numeric(30,6).
    const auto stored = numerics_both_ways(conn->get(),
        "SELECT ((random() * 10 ^ (i % 25))::numeric(30,6) * (CASE WHEN i % 7 = 0 THEN -1 ELSE 1 END))::numeric(30,6)"
        " FROM generate_series(1, 5000) AS i");
    ASSERT_EQ(stored.size(), 5000u);
    int mismatches = 0;
    for (const auto& [text, decoded] : stored) {
        if (decoded != text && ++mismatches <= 5) ADD_FAILURE() << decoded << " != " << text;
    }
    EXPECT_EQ(mismatches, 0);
}

TEST(ApiBinary, IntegersAndTimesDecodeAsStored) {
    harness::PostgresServer pg;
    const auto settings = pg.provision();
    auto conn = wallet::pg::connect(settings.db.api_url);
    ASSERT_TRUE(conn) << conn.error();
    const char* sql =
        "SELECT 2147483647::int4, (-5)::int2, 9007199254740993::int8, '2016-03-24T16:05:00Z'::timestamptz,"
        " '1969-12-31T23:59:59.5Z'::timestamptz, 'infinity'::timestamptz,"
        " extract(epoch FROM '2016-03-24T16:05:00Z'::timestamptz)::bigint";
    wallet::PgResultPtr rows(PQexecParams(conn->get(), sql, 0, nullptr, nullptr, nullptr, nullptr, 1));
    ASSERT_EQ(PQresultStatus(rows.get()), PGRES_TUPLES_OK) << PQerrorMessage(conn->get());
    auto bytes = [&](int column) {
        return std::string_view(PQgetvalue(rows.get(), 0, column), static_cast<std::size_t>(PQgetlength(rows.get(), 0, column)));
    };
    EXPECT_EQ(pg_binary::integer(bytes(0)), 2147483647);
    EXPECT_EQ(pg_binary::integer(bytes(1)), -5);
    EXPECT_EQ(pg_binary::integer(bytes(2)), 9007199254740993);
    EXPECT_EQ(pg_binary::epoch_seconds(bytes(3)), pg_binary::integer(bytes(6)));
    EXPECT_EQ(pg_binary::epoch_seconds(bytes(3)), 1458835500);
    EXPECT_EQ(pg_binary::epoch_seconds(bytes(4)), -1);  // rounded down, like the chain's whole seconds
    EXPECT_EQ(pg_binary::epoch_seconds(bytes(5)), std::nullopt);
}
