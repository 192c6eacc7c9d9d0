// Deployment: the Debian package that scripts/package builds with the
// distribution's flags (the ctest fixture deploy_package_builds, see
// t/CMakeLists.txt): lintian finds no error, its files are in Debian's layout
// for nginx modules, its Depends come from the binaries and name the nginx
// ABI, the module from the extracted package passes `nginx -t` with the
// shipped snippet and includes, and the programs print their version.
#include <gtest/gtest.h>

#include <set>
#include <optional>
#include <sstream>

#include "deploy_support.hpp"
#include "harness/harness.hpp"
#include "wallet/config.hpp"

using namespace harness;

namespace {

fs::path deb_path() { return deploy_test::built_package(); }

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// The package's files, extracted as dpkg would unpack them.
class ExtractedPackage {
public:
    ExtractedPackage() {
        auto r = run_command({"dpkg-deb", "-x", deb_path().string(), dir_.path().string()});
        if (r.exit_code != 0) throw std::runtime_error("dpkg-deb -x: " + r.output);
    }
    fs::path operator/(const std::string& relative) const { return dir_.path() / relative; }
    // A copy of a shipped configuration file with the package's absolute
    // paths pointed into the extracted tree.
    fs::path relocated(const std::string& relative) const {
        std::string text = read_file(dir_.path() / relative);
        text = replace_all(text, "modules/ngx_http_wallet_module.so", (dir_.path() / "usr/lib/nginx/modules/ngx_http_wallet_module.so").string());
        for (const char* shipped : {"/etc/nginx/wallet-rpc/", "/etc/wallet-rpc/", "/etc/wallet/"}) {
            text = replace_all(text, shipped, (dir_.path() / std::string(shipped).substr(1)).string());
        }
        fs::path copy = dir_.path() / "relocated" / fs::path(relative).filename();
        write_file(copy, text);
        return copy;
    }

private:
    TempDir dir_{"wallet-deb"};
};

std::string control_field(const std::string& field) {
    auto r = run_command({"dpkg-deb", "-f", deb_path().string(), field});
    return r.exit_code == 0 ? r.output : "";
}

}  // namespace

TEST(DebianPackage, LintianReportsNoError) {
    ASSERT_TRUE(fs::exists(deb_path())) << deb_path();
    auto r = run_command({"lintian", "--fail-on", "error", deb_path().string()}, {}, 300s);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    for (const auto& line : lines_of(r.output)) EXPECT_NE(line.rfind("E: ", 0), 0u) << line;
}

// The package declares the project's licence in Debian's machine-readable
// copyright format, with the text of the repository's LICENSE.
TEST(DebianPackage, CopyrightDeclaresTheLicence) {
    ExtractedPackage root;
    std::string copyright = read_file(root / "usr/share/doc/hive-wallet/copyright");
    EXPECT_EQ(copyright.rfind("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n", 0), 0u);
    EXPECT_NE(copyright.find("\nFiles: *\n"), std::string::npos);
    EXPECT_NE(copyright.find("\nLicense: Expat\n"), std::string::npos);
    // Every line of the licence's grant, as the copyright file indents it.
    std::string licence = read_file(source_dir() / "LICENSE");
    ASSERT_NE(licence.find("MIT License"), std::string::npos);
    for (const auto& line : lines_of(licence.substr(licence.find("Permission is hereby granted")))) {
        if (!line.empty()) {
            EXPECT_NE(copyright.find("\n " + line + "\n"), std::string::npos) << line;
        }
    }
}

TEST(DebianPackage, FilesAreInDebiansLayout) {
    auto listing = run_command({"dpkg-deb", "-c", deb_path().string()});
    ASSERT_EQ(listing.exit_code, 0) << listing.output;
    std::map<std::string, std::string> mode_of;  // ./path -> "-rwxr-xr-x root/root"
    for (const auto& line : lines_of(listing.output)) {
        std::istringstream fields(line);
        std::string mode, owner, size, date, time, path;
        fields >> mode >> owner >> size >> date >> time >> path;
        mode_of[path] = mode + " " + owner;
    }
    const std::string program = "-rwxr-xr-x root/root", data = "-rw-r--r-- root/root", secret = "-rw------- root/root";
    const std::map<std::string, std::string> expected = {
        {"./usr/bin/wallet-indexer", program},
        {"./usr/bin/wallet-backfill", program},
        {"./usr/bin/wallet-reorder", program},
        {"./usr/bin/wallet-db-setup", program},
        {"./usr/bin/wallet-rpc-proxy", program},
        {"./usr/lib/nginx/modules/ngx_http_wallet_module.so", data},
        {"./usr/share/nginx/modules-available/mod-http-wallet.conf", data},
        {"./lib/systemd/system/wallet-indexer.service", data},
        {"./lib/systemd/system/wallet-backfill.service", data},
        {"./lib/systemd/system/wallet-backfill-bulk.service", data},
        {"./lib/systemd/system/wallet-reorder.service", data},
        {"./lib/systemd/system/wallet-reorder.timer", data},
        {"./etc/nginx/wallet-rpc/jsonrpc-router.conf", data},
        {"./etc/nginx/wallet-rpc/wallet-history-api.conf", data},
        {"./etc/nginx/wallet-rpc/wallet-history-env.conf", data},
        {"./etc/wallet-rpc/routes.json", data},
        {"./etc/wallet/indexer.env", secret},
        {"./etc/wallet/backfill.env", secret},
        {"./etc/wallet/database.env", secret},
        {"./etc/wallet/api.env", secret},
        {"./usr/share/doc/hive-wallet/copyright", data},
        {"./usr/share/doc/hive-wallet/changelog.gz", data},
        {"./usr/share/doc/hive-wallet/deploy.md", data},
        {"./usr/share/man/man1/wallet-indexer.1.gz", data},
        {"./usr/share/man/man1/wallet-db-setup.1.gz", data},
        {"./usr/share/doc/hive-wallet/JSONRPC_ROUTER.md", data},
        {"./usr/share/doc/hive-wallet/monitoring.md", data},
        {"./usr/share/hive-wallet/monitoring/alerts.yml", data},
        {"./usr/share/hive-wallet/monitoring/alerts.test.yml", data},
        {"./usr/share/hive-wallet/monitoring/prometheus.yml", data},
        {"./usr/share/hive-wallet/monitoring/grafana/dashboards/wallet-router-api.json", data},
        {"./usr/share/hive-wallet/monitoring/grafana/dashboards/wallet-indexer-store.json", data},
        {"./usr/share/hive-wallet/monitoring/grafana/provisioning/dashboards/hive-wallet.yml", data},
        {"./usr/share/hive-wallet/monitoring/grafana/provisioning/datasources/prometheus.yml", data},
        {"./usr/share/hive-wallet/www/wallet/index.html", data},
        {"./usr/share/hive-wallet/www/wallet/wallet.js", data},
        {"./usr/share/hive-wallet/www/wallet/wallet.css", data},
        {"./usr/share/hive-wallet/www/status/index.html", data},
        {"./usr/share/hive-wallet/www/status/status.js", data},
        {"./usr/share/hive-wallet/www/status/status.css", data},
    };
    for (const auto& [path, mode] : expected) {
        ASSERT_TRUE(mode_of.contains(path)) << path << " missing from\n" << listing.output;
        EXPECT_EQ(mode_of[path], mode) << path;
    }
    // Nothing under /usr/local, no multiarch module directory, no build paths.
    for (const auto& [path, mode] : mode_of) {
        EXPECT_EQ(path.rfind("./usr/local", 0), std::string::npos) << path;
        EXPECT_EQ(path.find("x86_64-linux-gnu"), std::string::npos) << path;
    }

    // Every file under /etc is a conffile, and only those.
    auto conffiles = run_command({"dpkg-deb", "--info", deb_path().string(), "conffiles"});
    ASSERT_EQ(conffiles.exit_code, 0) << conffiles.output;
    std::set<std::string> declared;
    for (const auto& line : lines_of(conffiles.output)) declared.insert("." + line);
    std::set<std::string> under_etc;
    for (const auto& [path, mode] : mode_of) {
        if (path.rfind("./etc/", 0) == 0 && mode[0] == '-') under_etc.insert(path);
    }
    EXPECT_EQ(declared, under_etc);

    ExtractedPackage root;
    // The snippet names the module relative to nginx's modules path, as Debian's do.
    EXPECT_NE(read_file(root / "usr/share/nginx/modules-available/mod-http-wallet.conf")
                  .find("\nload_module modules/ngx_http_wallet_module.so;\n"),
              std::string::npos);
    // The units run the packaged programs as the package's system user.
    for (const char* daemon : {"wallet-indexer", "wallet-backfill", "wallet-reorder"}) {
        std::string unit = read_file(root / ("lib/systemd/system/" + std::string(daemon) + ".service"));
        EXPECT_NE(unit.find("ExecStart=/usr/bin/" + std::string(daemon) + "\n"), std::string::npos) << daemon;
        EXPECT_NE(unit.find("User=hive-wallet\n"), std::string::npos) << daemon;
    }
    // The installed launcher knows only the installed module.
    std::string launcher = read_file(root / "usr/bin/wallet-rpc-proxy");
    EXPECT_NE(launcher.find("\"/usr/lib/nginx/modules/ngx_http_wallet_module.so\""), std::string::npos);
    EXPECT_EQ(launcher.find(binary_dir().string()), std::string::npos);
}

TEST(DebianPackage, DependsComeFromTheBinariesAndNameTheNginxAbi) {
    std::string depends = control_field("Depends");
    // The ABI nginx-dev's headers belong to (what dh_nginx gives libnginx-mod-*).
    std::string abi;
    for (const auto& line : lines_of(read_file("/usr/share/nginx/src/debian/libnginx-mod.abisubstvars"))) {
        if (line.rfind("nginx:abi=", 0) == 0) abi = line.substr(10);
    }
    ASSERT_FALSE(abi.empty());
    EXPECT_NE(depends.find(abi), std::string::npos) << depends;
    for (const char* library : {"libc6 (>=", "libstdc++6 (>=", "libpq5 (>=", "libhiredis0.14 (>=", "libjansson4 (>=",
                                "libcurl4 (>=", "libssl3 (>=", "libpcre2-8-0 (>="}) {
        EXPECT_NE(depends.find(library), std::string::npos) << library << " not in " << depends;
    }
    EXPECT_NE(depends.find("adduser"), std::string::npos) << depends;
    EXPECT_EQ(control_field("Package"), "hive-wallet\n");
    // The version from git: the project's, then the commits (docs/debian-package.md).
    const std::string version = control_field("Version");
    EXPECT_NE(version.find('+'), std::string::npos) << version;
    EXPECT_NE(deb_path().filename().string().find("_" + version.substr(0, version.size() - 1) + "_"), std::string::npos);
}

// The secrets file postinst generates, here with fixed values.
void write_secrets(const ExtractedPackage& root, const std::string& writer, const std::string& reader) {
    write_file(root / "etc/wallet/secrets.env", "WALLET_WRITER_PASSWORD=" + writer + "\nWALLET_API_READER_PASSWORD=" +
                                                     reader + "\nWALLET_API_CURSOR_SECRET=a-cursor-key-of-32-characters-xx\n");
}

// nginx with the package's snippet and includes (paths into the extracted
// tree) and nothing in its environment: the API reads its settings from the
// files its configuration names, as `nginx -t` from a plain shell would.
NginxServer::Options packaged_api_and_router(const ExtractedPackage& root) {
    NginxServer::Options options;
    options.load_module = false;  // the package's snippet loads the package's module
    options.main_config = "include " + root.relocated("usr/share/nginx/modules-available/mod-http-wallet.conf").string() + ";";
    options.http_config = "include " + root.relocated("etc/nginx/wallet-rpc/wallet-history-api.conf").string() +
                          ";\nserver {\n    listen 127.0.0.1:{{PORT}};\n    include " +
                          root.relocated("etc/nginx/wallet-rpc/jsonrpc-router.conf").string() + ";\n}\n";
    return options;
}

TEST(DebianPackage, ExtractedModulePassesNginxTWithTheShippedSnippetAndIncludes) {
    ExtractedPackage root;
    write_secrets(root, "a-writer-password-0123456789", "a-reader-password-0123456789");
    auto r = NginxServer::test_config(packaged_api_and_router(root));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("test is successful"), std::string::npos) << r.output;
    // The API listens beside hived on a port no Hive service uses.
    EXPECT_NE(read_file(root / "etc/nginx/wallet-rpc/wallet-history-api.conf").find("listen 127.0.0.1:7730;"),
              std::string::npos);
}

// issue 35: `nginx -t` names a missing secrets file, and refuses the
// examples' placeholder naming the variable and the file to edit.
TEST(DebianPackage, NginxTNamesAMissingSecretsFileAndRefusesAPlaceholder) {
    ExtractedPackage root;
    auto missing = NginxServer::test_config(packaged_api_and_router(root));
    EXPECT_NE(missing.exit_code, 0) << missing.output;
    EXPECT_NE(missing.output.find("wallet_history_env_file: cannot read " + (root / "etc/wallet/secrets.env").string() +
                                  ": No such file or directory"),
              std::string::npos)
        << missing.output;

    fs::copy_file(source_dir() / "conf/env/secrets.env.example", root / "etc/wallet/secrets.env");
    auto placeholder = NginxServer::test_config(packaged_api_and_router(root));
    EXPECT_NE(placeholder.exit_code, 0) << placeholder.output;
    EXPECT_NE(placeholder.output.find(
                  "WALLET_API_READER_PASSWORD is still the placeholder \"CHANGE-ME-in-/etc/wallet/secrets.env\""),
              std::string::npos)
        << placeholder.output;
}

// postinst enables the module on every edge's nginx at once: with no wallet
// configuration and none of its settings, nginx must stay valid.
TEST(DebianPackage, EnabledModuleAloneKeepsAnUnconfiguredNginxValid) {
    ExtractedPackage root;
    NginxServer::Options options;
    options.load_module = false;
    options.main_config = "include " + root.relocated("usr/share/nginx/modules-available/mod-http-wallet.conf").string() + ";";
    options.http_config = "server {\n    listen 127.0.0.1:{{PORT}};\n    location / { return 204; }\n}\n";
    auto r = NginxServer::test_config(options);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("test is successful"), std::string::npos) << r.output;
}

TEST(DebianPackage, ProgramsPrintTheirVersion) {
    ExtractedPackage root;
    const std::string version = control_field("Version");
    for (const char* program : {"wallet-indexer", "wallet-backfill", "wallet-reorder", "wallet-db-setup", "wallet-rpc-proxy"}) {
        auto r = run_command({(root / ("usr/bin/" + std::string(program))).string(), "--version"});
        EXPECT_EQ(r.exit_code, 0) << program << ": " << r.output;
        EXPECT_EQ(r.output, std::string(program) + " " + version) << program;
    }
}

// What an operator reads (issue 32): each installed program's --help names
// every variable its start-up reads (recorded from load_settings here), and
// `wallet-db-setup --api-settings` every one of the nginx module.
TEST(DebianPackage, HelpTextsListEverySettingTheProgramsRead) {
    ExtractedPackage root;
    auto read_by = [](wallet::Component component) {
        std::vector<std::string> names;
        const wallet::EnvLookup recorder = [&names](const std::string& name) -> std::optional<std::string> {
            names.push_back(name);
            if (name.find("PASSWORD") != std::string::npos) return "recorded-password-" + name;
            return std::nullopt;
        };
        wallet::load_settings(recorder, component);
        return names;
    };
    const std::vector<std::pair<std::vector<std::string>, wallet::Component>> cases = {
        {{"wallet-indexer", "--help"}, wallet::Component::Indexer},
        {{"wallet-backfill", "--help"}, wallet::Component::Backfill},
        {{"wallet-reorder", "--help"}, wallet::Component::Indexer},
        {{"wallet-db-setup", "--help"}, wallet::Component::DatabaseSetup},
        {{"wallet-db-setup", "--api-settings"}, wallet::Component::Api},
    };
    for (const auto& [command, component] : cases) {
        auto r = run_command({(root / ("usr/bin/" + command[0])).string(), command[1]});
        ASSERT_EQ(r.exit_code, 0) << command[0] << " " << command[1] << ": " << r.output;
        auto names = read_by(component);
        if (component == wallet::Component::Api) names.insert(names.end(), {"WALLET_API_ACCOUNT_CACHE", "WALLET_API_DB_PROBE_INTERVAL_MS"});
        for (const auto& name : names) {
            EXPECT_NE(r.output.find("\n  " + name + " "), std::string::npos)
                << command[0] << " " << command[1] << " does not list " << name << ":\n" << r.output;
        }
    }
}
