// A strict reader of the Prometheus text exposition format 0.0.4, for the
// tests that scrape the module's metrics: every line is a "# HELP", a
// "# TYPE" or a sample of the family its last TYPE declared; names and
// labels follow the format's grammar, label values use only its escapes;
// counters end in _total; a histogram has cumulative _bucket{le} series
// ending with le="+Inf" equal to its _count, and a _sum; no series and no
// family appears twice. Anything else is an error naming the line.
#pragma once

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace prometheus_text {

struct Sample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
};

struct Scrape {
    std::vector<Sample> samples;
    std::map<std::string, std::string> types;  // family -> counter, gauge, histogram
    std::string error;                         // empty when the text is valid

    // The value of the one series `name{labels}` (labels must match exactly); nullopt when absent.
    std::optional<double> value(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
        for (const Sample& s : samples) {
            if (s.name == name && s.labels == labels) return s.value;
        }
        return std::nullopt;
    }
    // The sum of the series of `name` whose labels include `subset`.
    double sum(const std::string& name, const std::map<std::string, std::string>& subset = {}) const {
        double total = 0;
        for (const Sample& s : samples) {
            if (s.name != name) continue;
            bool match = true;
            for (const auto& [k, v] : subset) match = match && s.labels.count(k) && s.labels.at(k) == v;
            if (match) total += s.value;
        }
        return total;
    }
};

inline bool is_name(const std::string& s, bool label) {
    if (s.empty()) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!label && c == ':');
        if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
    }
    return true;
}

inline std::optional<double> parse_value(const std::string& s) {
    if (s == "+Inf") return INFINITY;
    if (s == "-Inf") return -INFINITY;
    if (s == "NaN") return NAN;
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size()) return std::nullopt;
    return v;
}

inline Scrape parse(const std::string& text) {
    Scrape out;
    std::set<std::string> series;
    std::set<std::string> helped;
    std::string family;
    std::string type;
    // Histogram checks: per series (labels without le) the last bucket value and whether +Inf came.
    std::map<std::string, double> last_bucket;
    std::map<std::string, double> inf_bucket;
    std::size_t line_no = 0;
    auto fail = [&](const std::string& why, const std::string& line) {
        if (out.error.empty()) out.error = "line " + std::to_string(line_no) + ": " + why + ": " + line;
    };
    if (!text.empty() && text.back() != '\n') out.error = "the text does not end with a newline";
    std::size_t start = 0;
    while (start < text.size() && out.error.empty()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(start, end - start);
        start = end + 1;
        ++line_no;
        if (line.empty()) {
            fail("empty line", line);
            break;
        }
        if (line[0] == '#') {
            if (line.rfind("# HELP ", 0) == 0) {
                std::string rest = line.substr(7);
                std::string name = rest.substr(0, rest.find(' '));
                if (!is_name(name, false) || !helped.insert(name).second) fail("bad or repeated HELP", line);
            } else if (line.rfind("# TYPE ", 0) == 0) {
                std::string rest = line.substr(7);
                std::size_t space = rest.find(' ');
                if (space == std::string::npos) {
                    fail("TYPE without a type", line);
                    break;
                }
                family = rest.substr(0, space);
                type = rest.substr(space + 1);
                if (!is_name(family, false) || out.types.count(family) ||
                    !(type == "counter" || type == "gauge" || type == "histogram" || type == "summary" ||
                      type == "untyped")) {
                    fail("bad or repeated TYPE", line);
                }
                if (type == "counter" && (family.size() < 6 || family.substr(family.size() - 6) != "_total")) {
                    fail("a counter's name does not end in _total", line);
                }
                out.types[family] = type;
            } else {
                fail("a comment that is neither HELP nor TYPE", line);
            }
            continue;
        }
        Sample sample;
        std::size_t i = 0;
        while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
        sample.name = line.substr(0, i);
        if (!is_name(sample.name, false)) {
            fail("bad metric name", line);
            break;
        }
        std::string identity = sample.name + "{";
        if (i < line.size() && line[i] == '{') {
            ++i;
            while (i < line.size() && line[i] != '}') {
                std::size_t eq = line.find('=', i);
                if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
                    fail("bad label", line);
                    break;
                }
                std::string key = line.substr(i, eq - i);
                std::string value;
                std::size_t j = eq + 2;
                bool closed = false;
                for (; j < line.size(); ++j) {
                    if (line[j] == '\\') {
                        if (j + 1 >= line.size()) break;
                        const char e = line[++j];
                        if (e == 'n') {
                            value += '\n';
                        } else if (e == '\\' || e == '"') {
                            value += e;
                        } else {
                            fail("bad escape in a label value", line);
                        }
                    } else if (line[j] == '"') {
                        closed = true;
                        break;
                    } else {
                        value += line[j];
                    }
                }
                if (!closed || !is_name(key, true) || key.rfind("__", 0) == 0 || sample.labels.count(key)) {
                    fail("bad label", line);
                    break;
                }
                sample.labels[key] = value;
                i = j + 1;
                if (i < line.size() && line[i] == ',') ++i;
            }
            if (i >= line.size() || line[i] != '}') {
                fail("unterminated labels", line);
                break;
            }
            ++i;
        }
        if (i >= line.size() || line[i] != ' ') {
            fail("no value", line);
            break;
        }
        std::string value_text = line.substr(i + 1);
        if (value_text.find(' ') != std::string::npos) value_text = value_text.substr(0, value_text.find(' '));  // timestamp
        auto value = parse_value(value_text);
        if (!value) {
            fail("bad value", line);
            break;
        }
        sample.value = *value;
        for (const auto& [k, v] : sample.labels) identity += k + "=" + v + ",";
        if (!series.insert(identity).second) fail("repeated series", line);
        // The sample must belong to the family of the last TYPE.
        bool belongs = sample.name == family;
        if (type == "histogram") {
            belongs = false;
            std::string le_free = family + "{";
            for (const auto& [k, v] : sample.labels) {
                if (k != "le") le_free += k + "=" + v + ",";
            }
            if (sample.name == family + "_bucket") {
                belongs = sample.labels.count("le") == 1;
                auto le = belongs ? parse_value(sample.labels.at("le")) : std::nullopt;
                if (!le || (last_bucket.count(le_free) && sample.value < last_bucket[le_free])) {
                    fail("histogram buckets not cumulative or le invalid", line);
                }
                last_bucket[le_free] = sample.value;
                if (le && std::isinf(*le)) inf_bucket[le_free] = sample.value;
            } else if (sample.name == family + "_sum") {
                belongs = !sample.labels.count("le");
            } else if (sample.name == family + "_count") {
                belongs = !sample.labels.count("le") && inf_bucket.count(le_free) && inf_bucket[le_free] == sample.value;
                if (!belongs) fail("_count without an equal le=\"+Inf\" bucket before it", line);
            }
        }
        if (!belongs) fail("a sample outside the family of the last TYPE", line);
        out.samples.push_back(std::move(sample));
    }
    return out;
}

}  // namespace prometheus_text
