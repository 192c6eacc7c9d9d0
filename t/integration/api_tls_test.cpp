// TLS between the API and PostgreSQL: sslmode keeps libpq's meaning (absent
// is prefer: TLS whenever the server offers it), negotiated inside nginx's
// event loop. The server here takes TLS connections only (hostssl), with a
// self-signed certificate made by the test, so a connection without TLS
// cannot pass for one with it; pg_stat_ssl says what each connection is.
#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/api_support.hpp"

using namespace api_test;
namespace fs = std::filesystem;

namespace {

// A self-signed certificate for 127.0.0.1 (its own CA): NAME.crt, NAME.key.
void make_certificate(const fs::path& dir, const std::string& name) {
    auto made = harness::run_command({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                      "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", (dir / (name + ".key")).string(),
                                      "-out", (dir / (name + ".crt")).string(), "-days", "2", "-subj", "/CN=localhost",
                                      "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"});
    ASSERT_EQ(made.exit_code, 0) << made.output;
}

// PostgreSQL (run as nobody when the test runs as root) reads its key only
// when it owns it, readable by no one else.
void give_to_server(const fs::path& file) {
    fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
    if (geteuid() != 0) return;
    const passwd* nobody = getpwnam("nobody");
    ASSERT_NE(nobody, nullptr);
    ASSERT_EQ(chown(file.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
}

// The API's connections: how many, and how many of them use TLS.
std::pair<int, int> api_connections(const harness::PostgresServer& pg) {
    const auto row = pg.query(
        "SELECT count(*), count(*) FILTER (WHERE s.ssl) FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) "
        "WHERE a.application_name = 'wallet_history_api'",
        "postgres");
    const auto tab = row.at(0).find('\t');
    return {std::stoi(row.at(0).substr(0, tab)), std::stoi(row.at(0).substr(tab + 1))};
}

const std::string kPage =
    R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_wallet_history","params":{"account":"tls-user","limit":3}})";

// An API_DATABASE_URL comes without the reader password the key derives from.
const std::string kCursorSecret = "tls-test-cursor-secret-0123456789";

bool is_result(const HttpResponse& r) { return r.status == 200 && r.body.find("\"result\"") != std::string::npos; }

}  // namespace

TEST(ApiTls, ConnectsWithTlsAsSslmodeSaysAndFailsClearlyOnAWrongCa) {
    ApiStack stack;
    generate_events(stack.pg(), "tls-user", 10, 1000);
    stack.set_checkpoint(9000, "2020-01-02T00:00:00Z");

    harness::TempDir tls("api-tls");
    make_certificate(tls.path(), "server");
    make_certificate(tls.path(), "stranger");  // a CA that did not sign the server's certificate
    give_to_server(tls.path() / "server.key");
    // TLS connections only, from loopback; local (unix socket) ones as before.
    const fs::path hba = tls.path() / "pg_hba.conf";
    {
        std::ofstream out(hba);
        out << "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n";
    }
    harness::PostgresServer& pg = stack.pg();
    pg.query("ALTER SYSTEM SET ssl = on", "postgres");
    pg.query("ALTER SYSTEM SET ssl_cert_file = '" + (tls.path() / "server.crt").string() + "'", "postgres");
    pg.query("ALTER SYSTEM SET ssl_key_file = '" + (tls.path() / "server.key").string() + "'", "postgres");
    pg.query("ALTER SYSTEM SET hba_file = '" + hba.string() + "'", "postgres");
    pg.stop();
    pg.start();

    const std::string url = "postgresql://wallet_api_reader:" + std::string(harness::kReaderPassword) + "@127.0.0.1:" +
                            std::to_string(pg.port()) + "/wallet";
    const std::string ca = (tls.path() / "server.crt").string();
    // "allow" tries without TLS first: refused, libpq connects again on a
    // new socket with TLS, which the pool must follow.
    for (const std::string& options : {std::string(), std::string("?sslmode=prefer"), std::string("?sslmode=require"),
                                       std::string("?sslmode=allow"), "?sslmode=verify-full&sslrootcert=" + ca}) {
        SCOPED_TRACE("API_DATABASE_URL options: " + options);
        stack.start_nginx({{"API_DATABASE_URL", url + options}, {"WALLET_API_CURSOR_SECRET", kCursorSecret}});
        auto page = stack.post(kPage);
        EXPECT_TRUE(is_result(page)) << page.body;
        const auto [connections, encrypted] = api_connections(pg);
        EXPECT_GE(connections, 1);
        EXPECT_EQ(encrypted, connections);
        stack.nginx().stop();
    }

    // A certificate the given CA did not sign: no connection, the reason in
    // the log, and an error answer (never an unencrypted fallback).
    stack.start_nginx(
        {{"API_DATABASE_URL", url + "?sslmode=verify-full&sslrootcert=" + (tls.path() / "stranger.crt").string()},
         {"WALLET_API_CURSOR_SECRET", kCursorSecret}});
    auto refused = stack.post(kPage);
    EXPECT_FALSE(is_result(refused)) << refused.body;
    EXPECT_NE(refused.body.find("internal error"), std::string::npos) << refused.body;
    const std::string log = harness::read_file(stack.nginx().error_log());
    EXPECT_NE(log.find("database connect to 127.0.0.1:" + std::to_string(pg.port()) + " failed"), std::string::npos) << log;
    EXPECT_NE(log.find("certificate verify failed"), std::string::npos) << log;
}
