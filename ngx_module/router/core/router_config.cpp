#include "router_config.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string_view>

#include "jsonrpc_json.hpp"
#include "wallet/json_util.hpp"
#include "wallet/handles.hpp"

namespace router {

const char* transport_name(Transport transport) {
    switch (transport) {
        case Transport::Http: return "http";
        case Transport::Https: return "https";
        case Transport::Ws: return "ws";
        case Transport::Wss: return "wss";
        case Transport::Unix: return "sock";
    }
    return "?";
}

// ---- patterns ----------------------------------------------------------------

void RoutePattern::CodeDeleter::operator()(void* code) const noexcept {
    pcre2_code_free(static_cast<pcre2_code*>(code));
}

namespace {

struct MatchDataDeleter {
    void operator()(pcre2_match_data* m) const noexcept { pcre2_match_data_free(m); }
};

// One match block per thread is enough: only whether it matched is used.
pcre2_match_data* thread_match_data() {
    thread_local std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(pcre2_match_data_create(1, nullptr));
    return data.get();
}

}  // namespace

wallet::Result<RoutePattern> RoutePattern::compile(const std::string& pattern) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    // Anchored at compile time (not match time) so that JIT code is used.
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_ANCHORED | PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
    if (code == nullptr) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error_code, message, sizeof(message));
        return wallet::make_error("bad regular expression: " + std::string(reinterpret_cast<char*>(message)) +
                                  " at offset " + std::to_string(error_offset));
    }
    RoutePattern out;
    out.text_ = pattern;
    out.jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    out.code_ = std::shared_ptr<void>(code, CodeDeleter{});
    out.find_literal_prefix();
    return out;
}

void RoutePattern::find_literal_prefix() {
    // An alternation outside parentheses, a character class (which may
    // hold '|' or ')'), quoting, comments or extended mode make the
    // pattern's text too hard to read safely: PCRE2 alone decides those.
    const std::string_view text = text_;
    if (text.find("\\Q") != std::string_view::npos || text.find("(?#") != std::string_view::npos) return;
    for (std::size_t at = text.find("(?"); at != std::string_view::npos; at = text.find("(?", at + 2)) {
        const std::size_t flags_end = text.find_first_of(":)", at);
        if (text.substr(at, flags_end - at).find('x') != std::string_view::npos) return;
    }
    int depth = 0;
    for (std::size_t i = 0; i < text_.size(); ++i) {
        const char c = text_[i];
        if (c == '\\') {
            ++i;
        } else if (c == '[') {
            return;
        } else if (c == '(') {
            ++depth;
        } else if (c == ')') {
            --depth;
        } else if (c == '|' && depth <= 0) {
            return;
        }
    }
    std::size_t pos = text_.starts_with('^') ? 1 : 0;
    std::string prefix;
    while (pos < text_.size()) {
        const char c = text_[pos];
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                           c == '-';
        if (plain) {
            prefix.push_back(c);
            pos += 1;
        } else if (c == '\\' && pos + 1 < text_.size() && text_[pos + 1] == '.') {
            prefix.push_back('.');
            pos += 2;
        } else {
            break;
        }
    }
    std::string_view rest = std::string_view(text_).substr(pos);
    const bool quantified = !rest.empty() && (rest[0] == '?' || rest[0] == '*' || rest[0] == '+' || rest[0] == '{');
    if (quantified && !prefix.empty()) prefix.pop_back();  // the last literal may be absent or repeated
    prefix_ = std::move(prefix);
    if (!quantified && rest.empty()) {
        literal_ = Literal::Whole;  // re.match: anything may follow
    } else if (!quantified && rest == "$") {
        literal_ = Literal::Exact;
    } else {
        literal_ = prefix_.empty() ? Literal::None : Literal::Prefix;
    }
}

namespace {

// PCRE2 refuses a subject that is not UTF-8: so do the shortcuts. A plain
// ASCII subject (most method names) is read sixteen bytes at a time; any
// other is checked byte by byte.
bool utf8_subject(std::string_view subject) {
    return wallet::json::plain_ascii_run(subject) == subject.size() || jsonrpc::valid_utf8(subject);
}

}  // namespace

bool RoutePattern::matches(std::string_view subject) const {
    if (literal_ != Literal::None && !subject.starts_with(prefix_)) return false;
    if (literal_ == Literal::Whole) return utf8_subject(subject);
    if (literal_ == Literal::Exact) {
        if (subject.size() == prefix_.size()) return utf8_subject(subject);
        // `$` also matches before a final newline: that subject asks PCRE2.
        if (subject.size() != prefix_.size() + 1 || subject.back() != '\n') return false;
    }
    auto* code = static_cast<pcre2_code*>(code_.get());
    int rc = pcre2_match(code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0,
                         thread_match_data(), nullptr);
    return rc >= 0;
}

// ---- targets -----------------------------------------------------------------

bool is_write(std::string_view path) {
    return path.find("broadcast") != std::string_view::npos || path.starts_with("network_broadcast_api.") ||
           path.starts_with("chain_api.push_");
}

wallet::Result<Endpoint> parse_target_url(const std::string& url) {
    Endpoint t;
    t.url = url;
    auto scheme_end = url.find("://");
    if (scheme_end == std::string::npos) return wallet::make_error("not a URL (expected scheme://...)");
    std::string scheme = url.substr(0, scheme_end);
    std::string rest = url.substr(scheme_end + 3);
    if (scheme == "http") {
        t.transport = Transport::Http;
        t.port = 80;
    } else if (scheme == "https") {
        t.transport = Transport::Https;
        t.port = 443;
    } else if (scheme == "ws") {
        t.transport = Transport::Ws;
        t.port = 80;
    } else if (scheme == "wss") {
        t.transport = Transport::Wss;
        t.port = 443;
    } else if (scheme == "sock") {
        t.transport = Transport::Unix;
        if (rest.empty() || rest[0] != '/') {
            return wallet::make_error("a sock:// target needs an absolute socket path (sock:///abs/path.sock)");
        }
        t.socket_path = rest;
        t.host_header = "localhost";
        return t;
    } else {
        return wallet::make_error("bad scheme '" + scheme + "' (expected http, https, ws, wss or sock)");
    }
    auto path_start = rest.find('/');
    std::string authority = rest.substr(0, path_start);
    if (path_start != std::string::npos) t.path = rest.substr(path_start);
    if (authority.empty()) return wallet::make_error("no host in URL");
    if (authority.find('@') != std::string::npos) return wallet::make_error("credentials in URLs are not supported");
    std::string port_text;
    if (authority[0] == '[') {
        auto close = authority.find(']');
        if (close == std::string::npos) return wallet::make_error("bad IPv6 address");
        t.host = authority.substr(1, close - 1);
        if (close + 1 < authority.size()) {
            if (authority[close + 1] != ':') return wallet::make_error("bad host:port");
            port_text = authority.substr(close + 2);
        }
    } else {
        auto colon = authority.rfind(':');
        t.host = authority.substr(0, colon);
        if (colon != std::string::npos) port_text = authority.substr(colon + 1);
    }
    if (t.host.empty()) return wallet::make_error("no host in URL");
    if (!port_text.empty() || authority.back() == ':') {
        if (port_text.empty() || port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos) {
            return wallet::make_error("bad port '" + port_text + "'");
        }
        long port = std::stol(port_text);
        if (port < 1 || port > 65535) return wallet::make_error("port out of range");
        t.port = static_cast<std::uint16_t>(port);
    }
    t.host_header = authority;
    return t;
}

// ---- routing table -------------------------------------------------------------

const Route* RoutingTable::match(std::string_view path) const {
    for (const Route& r : routes) {
        if (r.pattern.matches(path)) return &r;
    }
    return nullptr;
}

RouteDecision RoutingTable::decide(std::string_view path) const {
    if (const RouteDecision* known = memo.find(path)) return *known;
    const RouteDecision decision{match(path), is_write(path)};
    memo.remember(path, decision);
    return decision;
}

const RouteDecision* RouteMemo::find(std::string_view path) const {
    if (names_.empty()) return nullptr;
    auto it = names_.find(path);
    return it == names_.end() ? nullptr : &it->second;
}

void RouteMemo::remember(std::string_view path, RouteDecision decision) {
    if (path.size() > kMaxNameBytes) return;
    if (names_.size() >= kMaxNames) names_.clear();
    names_.emplace(path, decision);
}

std::optional<std::size_t> RoutingTable::find_target(std::string_view name) const {
    for (std::size_t i = 0; i < targets.size(); ++i) {
        if (targets[i].name == name) return i;
    }
    return std::nullopt;
}

namespace {

using jsonrpc::JsonDocument;
using jsonrpc::JsonKind;

class Loader {
public:
    Loader(const std::string& source) : source_(source) {}

    wallet::Result<RoutingTable> load(std::string_view text) {
        JsonDocument doc;
        if (doc.parse(text, 64) != jsonrpc::JsonParseStatus::Ok) return fail("", "not valid JSON: " + doc.error());
        if (doc.kind(0) != JsonKind::Object) return fail("", "the routing file must be a JSON object");
        RoutingTable table;
        table.source = source_;
        auto top = doc.children(0);
        for (std::size_t i = 0; i < top.size(); i += 2) {
            std::string key = doc.string_value(top[i]);
            if (key != "targets" && key != "timeouts" && key != "routes" && key != "default-cache" &&
                key != "chain-nodes" && key != "node-pools") {
                return fail(key,
                            "unknown key (expected targets, timeouts, routes, default-cache, chain-nodes, node-pools)");
            }
            for (std::size_t j = 0; j < i; j += 2) {
                if (doc.string_value(top[j]) == key) return fail(key, "duplicate key");
            }
        }
        auto targets = doc.member(0, "targets");
        if (!targets) return fail("targets", "missing");
        if (doc.kind(*targets) != JsonKind::Object) return fail("targets", "must be an object of name -> URL");
        auto target_nodes = doc.children(*targets);
        for (std::size_t i = 0; i < target_nodes.size(); i += 2) {
            std::string name = doc.string_value(target_nodes[i]);
            std::string key = "targets." + name;
            if (table.find_target(name)) return fail(key, "duplicate target");
            Target t;
            t.name = name;
            std::size_t value = target_nodes[i + 1];
            std::vector<std::size_t> urls;
            if (doc.kind(value) == JsonKind::String) {
                urls.push_back(value);
            } else if (doc.kind(value) == JsonKind::Array && doc.node(value).count > 0 && doc.node(value).count <= 64) {
                urls = doc.children(value);
            } else {
                return fail(key, "must be a URL string or a list of 1 to 64 URL strings");
            }
            for (std::size_t u = 0; u < urls.size(); ++u) {
                std::string url_key = doc.kind(value) == JsonKind::Array ? key + "[" + std::to_string(u) + "]" : key;
                if (doc.kind(urls[u]) != JsonKind::String) return fail(url_key, "must be a URL string");
                auto endpoint = parse_target_url(doc.string_value(urls[u]));
                if (!endpoint) return fail(url_key, endpoint.error());
                for (const Endpoint& other : t.urls) {
                    if (other.url == endpoint->url) return fail(url_key, "duplicate URL");
                }
                t.urls.push_back(std::move(endpoint).value());
            }
            table.targets.push_back(std::move(t));
        }

        if (auto timeouts = doc.member(0, "timeouts")) {
            if (doc.kind(*timeouts) == JsonKind::Number) {
                auto ms = timeout_ms(doc, *timeouts, "timeouts");
                if (!ms) return wallet::make_error(ms.error());
                for (Target& t : table.targets) t.timeout_ms = *ms;
            } else if (doc.kind(*timeouts) == JsonKind::Object) {
                auto nodes = doc.children(*timeouts);
                for (std::size_t i = 0; i < nodes.size(); i += 2) {
                    std::string name = doc.string_value(nodes[i]);
                    std::string key = "timeouts." + name;
                    auto index = table.find_target(name);
                    if (!index) return fail(key, "unknown target '" + name + "'");
                    auto ms = timeout_ms(doc, nodes[i + 1], key);
                    if (!ms) return wallet::make_error(ms.error());
                    table.targets[*index].timeout_ms = *ms;
                }
            } else {
                return fail("timeouts", "must be a number of seconds or an object of target -> seconds");
            }
        }

        if (auto chain = doc.member(0, "chain-nodes")) {
            auto loaded = load_chain_nodes(doc, *chain, table);
            if (!loaded) return wallet::make_error(loaded.error());
        }
        if (auto pools = doc.member(0, "node-pools")) {
            auto loaded = load_node_pools(doc, *pools, table);
            if (!loaded) return wallet::make_error(loaded.error());
        }

        if (auto default_cache = doc.member(0, "default-cache")) {
            auto ttl = seconds(doc, *default_cache, "default-cache");
            if (!ttl) return wallet::make_error(ttl.error());
            table.default_cache = *ttl;
        }

        auto routes = doc.member(0, "routes");
        if (!routes) return fail("routes", "missing");
        if (doc.kind(*routes) != JsonKind::Object) return fail("routes", "must be an object of regex -> route");
        auto route_nodes = doc.children(*routes);
        for (std::size_t i = 0; i < route_nodes.size(); i += 2) {
            std::string pattern = doc.string_value(route_nodes[i]);
            std::string key = "routes." + wallet::json::quoted(pattern);
            for (const Route& r : table.routes) {
                if (r.pattern.text() == pattern) return fail(key, "duplicate route");
            }
            std::size_t value = route_nodes[i + 1];
            if (doc.kind(value) != JsonKind::Object) return fail(key, "must be an object");
            auto compiled = RoutePattern::compile(pattern);
            if (!compiled) return fail(key, compiled.error());
            Route route{std::move(compiled).value(), 0, std::nullopt, 0, false};
            auto members = doc.children(value);
            for (std::size_t m = 0; m < members.size(); m += 2) {
                std::string name = doc.string_value(members[m]);
                if (name != "target" && name != "cache" && name != "translate_to_app_base" &&
                    name != "expire_if_reversible") {
                    return fail(key + "." + name,
                                "unknown key (expected target, cache, translate_to_app_base, expire_if_reversible)");
                }
            }
            auto target = doc.member(value, "target");
            if (!target) return fail(key + ".target", "missing");
            if (doc.kind(*target) != JsonKind::String) return fail(key + ".target", "must be a string");
            std::string target_name = doc.string_value(*target);
            auto index = table.find_target(target_name);
            if (!index) return fail(key + ".target", "unknown target '" + target_name + "'");
            route.target = *index;
            if (auto cache = doc.member(value, "cache")) {
                auto ttl = seconds(doc, *cache, key + ".cache");
                if (!ttl) return wallet::make_error(ttl.error());
                route.cache = *ttl;
            }
            if (auto translate = doc.member(value, "translate_to_app_base")) {
                JsonKind k = doc.kind(*translate);
                if (k != JsonKind::True && k != JsonKind::False) {
                    return fail(key + ".translate_to_app_base", "must be true or false");
                }
                route.translate = k == JsonKind::True;
            }
            if (auto final_at_lib = doc.member(value, "expire_if_reversible")) {
                JsonKind k = doc.kind(*final_at_lib);
                if (k != JsonKind::True && k != JsonKind::False) {
                    return fail(key + ".expire_if_reversible", "must be true or false");
                }
                route.expire_if_reversible = k == JsonKind::True;
                if (route.expire_if_reversible && !table.targets[route.target].chain_node) {
                    return fail(key + ".expire_if_reversible",
                                "target '" + target_name + "' is not listed in chain-nodes (its last irreversible block "
                                "would be unknown)");
                }
            }
            table.routes.push_back(std::move(route));
        }
        for (Route& r : table.routes) r.ttl = r.cache.value_or(table.default_cache);
        return table;
    }

private:
    // A top-level object of target name -> settings object with the keys
    // `allowed` only; `apply(target, settings, key)` reads one target's.
    template <typename Apply>
    wallet::Result<bool> each_target(const JsonDocument& doc, std::size_t node, const std::string& section,
                                     std::initializer_list<std::string_view> allowed, RoutingTable& table,
                                     Apply&& apply) const {
        std::string expected;
        for (std::string_view name : allowed) {
            if (!expected.empty()) expected += ", ";
            expected += name;
        }
        if (doc.kind(node) != JsonKind::Object) return fail(section, "must be an object of target -> settings");
        auto nodes = doc.children(node);
        for (std::size_t i = 0; i < nodes.size(); i += 2) {
            std::string name = doc.string_value(nodes[i]);
            std::string key = section + "." + name;
            auto index = table.find_target(name);
            if (!index) return fail(key, "unknown target '" + name + "'");
            for (std::size_t j = 0; j < i; j += 2) {
                if (doc.string_value(nodes[j]) == name) return fail(key, "duplicate target");
            }
            std::size_t settings = nodes[i + 1];
            if (doc.kind(settings) != JsonKind::Object) return fail(key, "must be an object");
            auto members = doc.children(settings);
            for (std::size_t m = 0; m < members.size(); m += 2) {
                std::string member = doc.string_value(members[m]);
                if (std::find(allowed.begin(), allowed.end(), member) == allowed.end()) {
                    return fail(key + "." + member, "unknown key (expected " + expected + ")");
                }
            }
            auto applied = apply(table.targets[*index], settings, key);
            if (!applied) return applied;
        }
        return true;
    }

    // An interval in seconds (a number, at least 0.1 s).
    wallet::Result<std::int64_t> interval_ms(const JsonDocument& doc, std::size_t node, const std::string& key) const {
        auto ms = timeout_ms(doc, node, key);
        if (!ms) return ms;
        return std::max<std::int64_t>(*ms, 100);
    }

    // "chain-nodes": {"<target>": {"poll_interval": seconds, "max_lag": blocks}}
    wallet::Result<bool> load_chain_nodes(const JsonDocument& doc, std::size_t node, RoutingTable& table) const {
        return each_target(doc, node, "chain-nodes", {"poll_interval", "max_lag"}, table,
                           [&](Target& target, std::size_t settings, const std::string& key) -> wallet::Result<bool> {
            target.chain_node = true;
            if (auto poll = doc.member(settings, "poll_interval")) {
                auto ms = interval_ms(doc, *poll, key + ".poll_interval");
                if (!ms) return wallet::make_error(ms.error());
                target.poll_ms = *ms;
            }
            if (auto lag = doc.member(settings, "max_lag")) {
                auto blocks = doc.unsigned_integer(*lag);
                if (!blocks || *blocks > 1'000'000'000) return fail(key + ".max_lag", "must be a non-negative integer");
                target.max_lag = *blocks;
            }
            return true;
        });
    }

    // "node-pools": {"<target>": {"max_failures": count, "probe_interval": seconds}}
    wallet::Result<bool> load_node_pools(const JsonDocument& doc, std::size_t node, RoutingTable& table) const {
        return each_target(doc, node, "node-pools", {"max_failures", "probe_interval"}, table,
                           [&](Target& target, std::size_t settings, const std::string& key) -> wallet::Result<bool> {
            if (!target.pool()) return fail(key, "target '" + target.name + "' has one URL: it is not a pool");
            if (auto failures = doc.member(settings, "max_failures")) {
                auto count = doc.unsigned_integer(*failures);
                if (!count || *count < 1 || *count > 1000) {
                    return fail(key + ".max_failures", "must be an integer from 1 to 1000");
                }
                target.max_failures = *count;
            }
            if (auto probe = doc.member(settings, "probe_interval")) {
                auto ms = interval_ms(doc, *probe, key + ".probe_interval");
                if (!ms) return wallet::make_error(ms.error());
                target.probe_ms = *ms;
            }
            return true;
        });
    }

    wallet::Error fail(const std::string& key, const std::string& reason) const {
        std::string where = source_;
        if (!key.empty()) where += ": " + key;
        return wallet::make_error(where + ": " + reason);
    }

    wallet::Result<std::int64_t> seconds(const JsonDocument& doc, std::size_t node, const std::string& key) const {
        const auto value = doc.unsigned_integer(node);
        if (!value || *value > 999'999'999) return fail(key, "must be a non-negative integer number of seconds");
        return static_cast<std::int64_t>(*value);
    }

    wallet::Result<std::int64_t> timeout_ms(const JsonDocument& doc, std::size_t node, const std::string& key) const {
        if (doc.kind(node) != JsonKind::Number) return fail(key, "must be a number of seconds");
        double value = std::strtod(std::string(doc.text(node)).c_str(), nullptr);
        if (!(value > 0) || value > 86400 || !std::isfinite(value)) {
            return fail(key, "must be a positive number of seconds (at most 86400)");
        }
        return static_cast<std::int64_t>(std::llround(value * 1000.0));
    }

    std::string source_;
};

}  // namespace

wallet::Result<RoutingTable> parse_routing_table(std::string_view json_text, const std::string& source) {
    return Loader(source).load(json_text);
}

wallet::Result<RoutingTable> load_routing_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return wallet::make_error(path + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_routing_table(text.str(), path);
}

}  // namespace router
