// The docs are the test (issue 35): every `sh` block of docs/deploy.md runs as
// written, in order, as root, on this machine: the package the suite built is
// installed, PostgreSQL set up, the bulk backfill run against the node
// simulator on hived's customary 127.0.0.1:8091, the indexer started from the
// block after it, nginx started with the shipped files and a self-signed
// certificate, a wallet_history call and a node call answered over TLS
// through the router, `nginx -t` run from a plain shell; then a newer build of
// the package (with a schema migration) installed over it with the API
// answering before and after, and the package purged. Where systemd is not
// the init, t/integration/deploy/systemctl runs each unit's ExecStart with its
// EnvironmentFile= lines as systemd reads them. docs/deploy.md, "How this page
// is tested".
#include <gtest/gtest.h>

#include <iterator>
#include <regex>
#include <sstream>
#include <unistd.h>

#include "deploy_support.hpp"
#include "harness/harness.hpp"
#include "harness/node_sim.hpp"

using namespace harness;

namespace {

struct ShellBlock {
    std::string section;  // the "## N. Title" it is under
    std::string text;
};

// The blocks fenced exactly as ```sh, in order.
std::vector<ShellBlock> shell_blocks(const fs::path& markdown) {
    std::vector<ShellBlock> blocks;
    std::istringstream in(read_file(markdown));
    std::string line, section;
    bool inside = false, wanted = false;
    std::string text;
    while (std::getline(in, line)) {
        if (!inside && line.rfind("## ", 0) == 0) section = line.substr(3);
        if (line.rfind("```", 0) == 0) {
            if (!inside) {
                inside = true;
                wanted = line == "```sh";
                text.clear();
            } else {
                inside = false;
                if (wanted) blocks.push_back({section, text});
            }
            continue;
        }
        if (inside) text += line + "\n";
    }
    return blocks;
}

std::string field_of(const fs::path& deb, const std::string& field) {
    auto r = run_command({"dpkg-deb", "-f", deb.string(), field});
    return r.output.substr(0, r.output.find('\n'));
}

// What the server holds for the test and takes back afterwards, whatever
// happens: the package, the database, the files the docs' blocks write
// outside the package, and the processes the blocks started.
class MachineState {
public:
    MachineState() {
        redis_conf_ = read_file("/etc/redis/redis.conf");
        cleanup();
    }
    ~MachineState() {
        cleanup();
        write_file("/etc/redis/redis.conf", redis_conf_);
    }
    MachineState(const MachineState&) = delete;
    MachineState& operator=(const MachineState&) = delete;

    void stop_units(const fs::path& shim, const fs::path& state) {
        for (const char* unit : {"wallet-indexer", "nginx"}) {
            run_command({shim.string(), "stop", unit}, {{"DEPLOY_STATE", state.string()}});
        }
    }

private:
    static void cleanup() {
        run_command({"sh", "-c",
                     "test -f /run/nginx.pid && /usr/sbin/nginx -s quit; sleep 1;"
                     "rm -f /etc/nginx/conf.d/wallet-history-api.conf /etc/nginx/conf.d/public-tls.conf;"
                     "dpkg -P hive-wallet >/dev/null 2>&1;"
                     "redis-cli -p 6379 shutdown nosave >/dev/null 2>&1;"
                     "rm -f /etc/postgresql/15/main/conf.d/hive-wallet.conf;"
                     "if pg_ctlcluster 15 main status >/dev/null 2>&1; then"
                     "  su postgres -c \"dropdb --if-exists wallet; dropuser --if-exists wallet_writer;"
                     "  dropuser --if-exists wallet_api_reader\" >/dev/null 2>&1; pg_ctlcluster 15 main stop; fi;"
                     "rm -rf /etc/letsencrypt/live/api.example.org"},
                    {}, 120s);
    }
    std::string redis_conf_;
};

}  // namespace

TEST(DeployDocs, EveryShellBlockOfDeployMdRunsAsWrittenFromInstallToUpgradeAndPurge) {
    if (geteuid() != 0) GTEST_SKIP() << "the deployment runs as root (it installs the package on this machine)";
    for (const char* path : {"/usr/sbin/nginx", "/usr/lib/postgresql/15/bin/postgres", "/usr/bin/redis-server",
                             "/etc/redis/redis.conf", "/etc/postgresql/15/main"}) {
        ASSERT_TRUE(fs::exists(path)) << path << " (scripts/install-deps installs it)";
    }
    const fs::path deb = deploy_test::built_package();
    ASSERT_FALSE(deb.empty()) << "no package in " << binary_dir() / "deploy";
    const auto blocks = shell_blocks(source_dir() / "docs/deploy.md");
    ASSERT_GE(blocks.size(), 8u);

    MachineState machine;
    TempDir work("wallet-deploy");
    const fs::path server = work.path() / "server";  // where the operator copied the .deb
    fs::create_directories(server);
    fs::copy_file(deb, server / deb.filename());

    // hived: the node simulator on its customary HTTP port, a short chain
    // that keeps growing (the indexer has a tail to follow).
    NodeSimulator node({"--synthetic", "--length", "3000", "--block-interval-ms", "500", "--port", "8091"});

    // The certificate certbot would have made, self-signed, trusted by curl.
    const fs::path live = "/etc/letsencrypt/live/api.example.org";
    fs::create_directories(live);
    auto cert = run_command({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                             "/CN=api.example.org", "-addext", "subjectAltName=DNS:api.example.org", "-keyout",
                             (live / "privkey.pem").string(), "-out", (live / "fullchain.pem").string()});
    ASSERT_EQ(cert.exit_code, 0) << cert.output;

    // systemctl: the real one under systemd, else the test's stand-in.
    const bool systemd = fs::exists("/run/systemd/system");
    const fs::path shim_dir = source_dir() / "t/integration/deploy";
    const fs::path shim = shim_dir / "systemctl";
    const fs::path units_state = work.path() / "units";
    std::string path = "/usr/sbin:/usr/bin:/sbin:/bin";
    if (!systemd) path = shim_dir.string() + ":" + path;

    // A plain root shell: none of the test's environment.
    auto run_block = [&](const ShellBlock& block) {
        SCOPED_TRACE(block.section);
        return run_command({"env", "-i", "PATH=" + path, "HOME=/root", "LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive",
                            "CURL_CA_BUNDLE=" + (live / "fullchain.pem").string(), "DEPLOY_STATE=" + units_state.string(),
                            "bash", "-e", "-o", "pipefail", "-c", "cd " + server.string() + "\n" + block.text},
                           {}, 600s);
    };
    auto api_status = [] {
        return run_command({"curl", "-sS", "http://127.0.0.1:7730/", "-d",
                            R"({"jsonrpc":"2.0","id":1,"method":"wallet_history.get_status","params":{}})"});
    };

    std::size_t i = 0;
    for (; i < blocks.size() && blocks[i].section.find("Upgrade") == std::string::npos; ++i) {
        auto r = run_block(blocks[i]);
        ASSERT_EQ(r.exit_code, 0) << "docs/deploy.md, \"" << blocks[i].section << "\":\n" << blocks[i].text << "\n"
                                  << r.output;
        if (blocks[i].text.find("--resolve api.example.org") != std::string::npos) {
            // Both answers, over TLS through the router: the API's and the node's.
            EXPECT_EQ(r.output.find("\"error\""), std::string::npos) << r.output;
            const std::regex result(R"("result")");
            EXPECT_EQ(std::distance(std::sregex_iterator(r.output.begin(), r.output.end(), result), std::sregex_iterator()), 2)
                << r.output;
            EXPECT_NE(r.output.find("head_block_number"), std::string::npos) << r.output;
        }
        if (blocks[i].text.find("nginx -t") != std::string::npos) {
            EXPECT_NE(r.output.find("test is successful"), std::string::npos) << r.output;
        }
    }
    ASSERT_LT(i, blocks.size()) << "no \"Upgrade\" section";
    // The indexer follows the chain from the block after the bulk load.
    auto health = run_command({"curl", "-sS", "http://127.0.0.1:7731/health"});
    EXPECT_TRUE(std::regex_search(health.output, std::regex(R"("ok":\s*true)"))) << health.output;
    auto before = api_status();
    ASSERT_NE(before.output.find("\"result\""), std::string::npos) << before.output;

    // A newer build: the same tree, a higher version, one more migration.
    const std::string old_version = field_of(deb, "Version");
    TempDir newer_out("wallet-deploy-newer");
    auto package = run_command({(source_dir() / "scripts/package").string(), "--output", newer_out.path().string(),
                                "--build-dir", (binary_dir() / "deploy-build").string(), "--no-lintian", "--version",
                                old_version + "+upgrade1", "--extra-migrations",
                                (shim_dir / "upgrade-migrations").string()},
                               {}, 900s);
    ASSERT_EQ(package.exit_code, 0) << package.output;
    fs::remove(server / deb.filename());
    for (const auto& entry : fs::directory_iterator(newer_out.path())) {
        if (entry.path().extension() == ".deb") fs::copy_file(entry.path(), server / entry.path().filename());
    }

    for (; i < blocks.size() && blocks[i].section.find("Removal") == std::string::npos; ++i) {
        auto r = run_block(blocks[i]);
        ASSERT_EQ(r.exit_code, 0) << "docs/deploy.md, \"" << blocks[i].section << "\":\n" << blocks[i].text << "\n"
                                  << r.output;
    }
    EXPECT_EQ(run_command({"dpkg-query", "-W", "-f=${Version}", "hive-wallet"}).output, old_version + "+upgrade1");
    auto migrated = run_command({"su", "postgres", "-c", "cd / && psql -At -d wallet -c 'SELECT max(version) FROM schema_version'"});
    EXPECT_EQ(migrated.output, "9001\n");
    auto during = api_status();
    EXPECT_NE(during.output.find("\"result\""), std::string::npos) << during.output;
    if (!systemd) {
        // What postinst asks systemd for (the units that ran, nginx reloaded).
        run_command({shim.string(), "restart", "wallet-indexer", "nginx"}, {{"DEPLOY_STATE", units_state.string()}});
    }
    auto after = api_status();
    EXPECT_NE(after.output.find("\"result\""), std::string::npos) << after.output;
    auto version = run_command({"/usr/bin/wallet-indexer", "--version"});
    EXPECT_EQ(version.output, "wallet-indexer " + old_version + "+upgrade1\n");

    machine.stop_units(shim, units_state);
    for (; i < blocks.size(); ++i) {
        auto r = run_block(blocks[i]);
        ASSERT_EQ(r.exit_code, 0) << "docs/deploy.md, \"" << blocks[i].section << "\":\n" << blocks[i].text << "\n"
                                  << r.output;
    }
    // Purged cleanly: no files, no configuration, no module link, no secrets.
    EXPECT_NE(run_command({"dpkg-query", "-W", "hive-wallet"}).exit_code, 0);
    for (const char* gone : {"/etc/wallet", "/etc/wallet-rpc", "/etc/nginx/wallet-rpc", "/usr/bin/wallet-indexer",
                             "/etc/nginx/modules-enabled/50-mod-http-wallet.conf",
                             "/usr/lib/nginx/modules/ngx_http_wallet_module.so"}) {
        EXPECT_FALSE(fs::exists(fs::symlink_status(gone))) << gone;
    }
}
