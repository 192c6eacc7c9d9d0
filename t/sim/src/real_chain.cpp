#include "real_chain.hpp"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <set>
#include <string_view>

namespace sim {

namespace fs = std::filesystem;

namespace {

// Files of mainnet as served by a current hived; the Steem-era and testnet
// files are other chains or other node software.
bool is_mainnet_file(std::string_view file) {
    return file.starts_with("hived-mainnet-5m/") || file.starts_with("haf-block_api-get_block/");
}

std::optional<std::uint32_t> as_block_number(const json_t* value) {
    if (!json_is_integer(value)) return std::nullopt;
    json_int_t number = json_integer_value(value);
    if (number <= 0 || number > 0xffffffffLL) return std::nullopt;
    return static_cast<std::uint32_t>(number);
}

std::string string_member(const json_t* object, const char* key) {
    const json_t* member = json_object_get(object, key);
    return json_is_string(member) ? std::string(json_string_value(member)) : std::string();
}

std::uint32_t uint_member(const json_t* object, const char* key) {
    return static_cast<std::uint32_t>(json_integer_value(json_object_get(object, key)));
}

}  // namespace

class RealChainLoader {
public:
    explicit RealChainLoader(RealChain& chain) : chain_(chain) {}

    wallet::Result<bool> load(const fs::path& dir);

private:
    struct HistoryRef {
        std::string account;
        std::uint64_t seq;
        std::size_t load_index;
    };

    void add_ops(const json_t* list, bool legacy);
    std::optional<std::size_t> add_op(const json_t* envelope, bool legacy, std::uint64_t order);
    void add_history(const json_t* list, bool legacy, const std::string& account);
    void add_header(std::uint32_t block, const json_t* header);
    void add_block(const json_t* block, bool legacy);
    void note_time(std::uint32_t block, std::string_view timestamp);
    void finish();
    void build_histories(const std::vector<std::size_t>& final_index);

    RealChain& chain_;
    std::vector<RealOp> loaded_;
    std::map<std::string, std::size_t> by_key_;
    std::vector<HistoryRef> history_refs_;
    std::set<std::string> witness_names_;
    std::uint64_t next_order_ = 0;
};

wallet::Result<std::unique_ptr<RealChain>> RealChain::load(const fs::path& fixtures_dir) {
    std::unique_ptr<RealChain> chain(new RealChain());
    RealChainLoader loader(*chain);
    auto loaded = loader.load(fixtures_dir);
    if (!loaded) return wallet::make_error(loaded.error());
    return chain;
}

wallet::Result<bool> RealChainLoader::load(const fs::path& dir) {
    json_error_t error;
    std::string manifest_text;
    {
        std::ifstream in(dir / "manifest.json", std::ios::binary | std::ios::ate);
        manifest_text.resize(static_cast<std::size_t>(std::max<std::streamoff>(0, in.tellg())));
        in.seekg(0);
        in.read(manifest_text.data(), static_cast<std::streamsize>(manifest_text.size()));
    }
    wallet::JsonPtr manifest = wallet::json_own(parse_json(manifest_text, &error));
    if (!manifest || !json_is_array(manifest.get()))
        return wallet::make_error("cannot read " + (dir / "manifest.json").string() + ": " + error.text);

    // Operations first in the order whose output shows emission order best.
    static constexpr std::string_view kOpMethods[] = {
        "account_history_api.get_ops_in_block", "account_history_api.enum_virtual_ops",
        "account_history_api.get_account_history", "condenser_api.get_ops_in_block",
        "condenser_api.get_account_history"};

    struct FileEntry {
        std::string file;
        std::string method;
        const json_t* params;
    };
    std::vector<FileEntry> entries;
    for (std::size_t i = 0; i < json_array_size(manifest.get()); ++i) {
        const json_t* entry = json_array_get(manifest.get(), i);
        std::string file = string_member(entry, "file");
        if (!is_mainnet_file(file)) continue;
        entries.push_back({file, string_member(entry, "request_method"), json_object_get(entry, "request_params")});
    }

    auto read = [&](const FileEntry& entry) -> wallet::Result<wallet::JsonPtr> {
        json_error_t file_error;
        wallet::JsonPtr content =
            wallet::json_own(json_load_file((dir / entry.file).c_str(), JSON_DECODE_ANY, &file_error));
        if (!content) return wallet::make_error("cannot read " + entry.file + ": " + file_error.text);
        // Full JSON-RPC envelopes (haf files) hold the result one level down.
        if (json_is_object(content.get()) && json_object_get(content.get(), "jsonrpc") != nullptr) {
            json_t* result = json_object_get(content.get(), "result");
            if (result == nullptr) return wallet::JsonPtr{};
            return wallet::json_ref(result);
        }
        // Error patterns hold only code and message.
        if (json_is_object(content.get()) && json_object_get(content.get(), "code") != nullptr &&
            json_object_get(content.get(), "message") != nullptr)
            return wallet::JsonPtr{};
        return content;
    };

    for (unsigned rank = 0; rank < std::size(kOpMethods); ++rank) {
        for (const auto& entry : entries) {
            if (entry.method != kOpMethods[rank]) continue;
            auto content = read(entry);
            if (!content) return wallet::make_error(content.error());
            const json_t* result = content.value().get();
            if (result == nullptr) continue;
            ++chain_.stats_.files;
            bool legacy = entry.method.starts_with("condenser_api.");
            if (entry.method.ends_with("get_ops_in_block")) {
                add_ops(legacy ? result : json_object_get(result, "ops"), legacy);
            } else if (entry.method.ends_with("enum_virtual_ops")) {
                add_ops(json_object_get(result, "ops"), false);
                const json_t* groups = json_object_get(result, "ops_by_block");
                for (std::size_t g = 0; g < json_array_size(groups); ++g)
                    add_ops(json_object_get(json_array_get(groups, g), "ops"), false);
            } else {
                std::string account = legacy ? std::string(json_string_value(json_array_get(entry.params, 0)))
                                             : string_member(entry.params, "account");
                add_history(legacy ? result : json_object_get(result, "history"), legacy, account);
            }
        }
    }

    for (const auto& entry : entries) {
        const std::string& method = entry.method;
        bool blocks = method == "block_api.get_block" || method == "condenser_api.get_block" ||
                      method == "block_api.get_block_range" || method == "block_api.get_block_header" ||
                      method == "condenser_api.get_block_header" ||
                      method == "database_api.get_dynamic_global_properties";
        if (!blocks) continue;
        auto content = read(entry);
        if (!content) return wallet::make_error(content.error());
        const json_t* result = content.value().get();
        if (result == nullptr || json_is_null(result)) continue;
        ++chain_.stats_.files;
        if (method == "block_api.get_block") {
            if (const json_t* block = json_object_get(result, "block")) add_block(block, false);
        } else if (method == "condenser_api.get_block") {
            if (json_is_object(result)) add_block(result, true);
        } else if (method == "block_api.get_block_range") {
            const json_t* list = json_object_get(result, "blocks");
            for (std::size_t i = 0; i < json_array_size(list); ++i) add_block(json_array_get(list, i), false);
        } else if (method == "block_api.get_block_header" || method == "condenser_api.get_block_header") {
            const json_t* header = method == "block_api.get_block_header" ? json_object_get(result, "header") : result;
            auto block = method == "block_api.get_block_header"
                             ? as_block_number(json_object_get(entry.params, "block_num"))
                             : as_block_number(json_array_get(entry.params, 0));
            if (header != nullptr && json_is_object(header) && block) add_header(*block, header);
        } else {
            chain_.global_properties_ = wallet::json_own(json_deep_copy(result));
            auto head = as_block_number(json_object_get(result, "head_block_number"));
            if (!head) return wallet::make_error(entry.file + ": no head_block_number");
            chain_.head_ = *head;
            chain_.ids_[*head] = string_member(result, "head_block_id");
            note_time(*head, string_member(result, "time"));
            if (!string_member(result, "current_witness").empty())
                chain_.witnesses_[*head] = string_member(result, "current_witness");
        }
    }
    if (!chain_.global_properties_) return wallet::make_error("no database_api.get_dynamic_global_properties fixture");
    finish();
    return true;
}

void RealChainLoader::add_ops(const json_t* list, bool legacy) {
    for (std::size_t i = 0; i < json_array_size(list); ++i) add_op(json_array_get(list, i), legacy, next_order_++);
}

std::optional<std::size_t> RealChainLoader::add_op(const json_t* envelope, bool legacy, std::uint64_t order) {
    RealOp op;
    op.trx_id = string_member(envelope, "trx_id");
    op.block = uint_member(envelope, "block");
    op.trx_in_block = uint_member(envelope, "trx_in_block");
    op.op_in_trx = uint_member(envelope, "op_in_trx");
    const json_t* virtual_op = json_object_get(envelope, "virtual_op");
    op.virtual_op = json_is_true(virtual_op) || (json_is_integer(virtual_op) && json_integer_value(virtual_op) != 0);
    op.timestamp = string_member(envelope, "timestamp");
    op.order = order;
    const json_t* body = json_object_get(envelope, "op");
    if (legacy) {
        op.type = json_string_value(json_array_get(body, 0));
        op.value = legacy_to_nai(op.type, json_array_get(body, 1));
    } else {
        std::string type = string_member(body, "type");
        op.type = type.substr(0, type.size() - std::string_view("_operation").size());
        op.value = wallet::json_own(json_deep_copy(json_object_get(body, "value")));
    }
    op.type_id = op_type_id(op.type);
    note_time(op.block, op.timestamp);

    std::string key = std::to_string(op.block) + "/" + std::to_string(op.trx_in_block) + "/" +
                      std::to_string(op.op_in_trx) + "/" + (op.virtual_op ? "v" : "r") + "/" + op.type;
    auto [it, inserted] = by_key_.emplace(key, loaded_.size());
    if (!inserted) {
        if (!json_equal(loaded_[it->second].value.get(), op.value.get())) ++chain_.stats_.body_conflicts;
        return it->second;
    }
    loaded_.push_back(std::move(op));
    return it->second;
}

void RealChainLoader::add_history(const json_t* list, bool legacy, const std::string& account) {
    for (std::size_t i = 0; i < json_array_size(list); ++i) {
        const json_t* item = json_array_get(list, i);
        auto index = add_op(json_array_get(item, 1), legacy, next_order_++);
        if (!index) continue;
        history_refs_.push_back(
            {account, static_cast<std::uint64_t>(json_integer_value(json_array_get(item, 0))), *index});
    }
}

void RealChainLoader::note_time(std::uint32_t block, std::string_view timestamp) {
    if (auto seconds = parse_time(timestamp)) chain_.times_.emplace(block, *seconds);
}

void RealChainLoader::add_header(std::uint32_t block, const json_t* header) {
    note_time(block, string_member(header, "timestamp"));
    std::string previous = string_member(header, "previous");
    if (block > 1 && previous.size() == 40) chain_.ids_.emplace(block - 1, previous);
    std::string witness = string_member(header, "witness");
    if (!witness.empty()) {
        chain_.witnesses_.emplace(block, witness);
        witness_names_.insert(witness);
    }
    std::string merkle = string_member(header, "transaction_merkle_root");
    if (!merkle.empty()) chain_.merkle_roots_.emplace(block, merkle);
}

void RealChainLoader::add_block(const json_t* block, bool legacy) {
    std::string id = string_member(block, "block_id");
    if (id.size() != 40) return;
    auto number = static_cast<std::uint32_t>(std::stoul(id.substr(0, 8), nullptr, 16));
    chain_.ids_.emplace(number, id);
    add_header(number, block);
    if (chain_.full_blocks_.count(number) != 0) return;
    wallet::JsonPtr copy = wallet::json_own(json_deep_copy(block));
    if (legacy) {
        // Keep the block_api (NAI) shape: operations as {type, value}, no
        // condenser-only transaction members.
        json_t* transactions = json_object_get(copy.get(), "transactions");
        for (std::size_t t = 0; t < json_array_size(transactions); ++t) {
            json_t* transaction = json_array_get(transactions, t);
            json_object_del(transaction, "transaction_id");
            json_object_del(transaction, "block_num");
            json_object_del(transaction, "transaction_num");
            json_t* operations = json_object_get(transaction, "operations");
            wallet::JsonPtr converted = wallet::json_own(json_array());
            for (std::size_t o = 0; o < json_array_size(operations); ++o) {
                const json_t* op = json_array_get(operations, o);
                std::string name = json_string_value(json_array_get(op, 0));
                std::string type = name + "_operation";
                json_array_append_new(converted.get(), json_pack("{s:s, s:o}", "type", type.c_str(), "value",
                                                                 legacy_to_nai(name, json_array_get(op, 1)).release()));
            }
            json_object_set(transaction, "operations", converted.get());
        }
    }
    chain_.full_blocks_.emplace(number, std::move(copy));
}

void RealChainLoader::finish() {
    // Order as hived's get_ops_in_block: by (trx_in_block, op_in_trx), ties in emission order.
    std::vector<std::size_t> order(loaded_.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const RealOp& x = loaded_[a];
        const RealOp& y = loaded_[b];
        return std::tie(x.block, x.trx_in_block, x.op_in_trx, x.order) <
               std::tie(y.block, y.trx_in_block, y.op_in_trx, y.order);
    });
    std::vector<std::size_t> final_index(loaded_.size());
    chain_.ops_.reserve(loaded_.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
        final_index[order[i]] = i;
        chain_.ops_.push_back(std::move(loaded_[order[i]]));
    }
    loaded_.clear();
    for (std::size_t i = 0; i < chain_.ops_.size(); ++i) {
        const RealOp& op = chain_.ops_[i];
        if (chain_.blocks_.empty() || chain_.blocks_.back() != op.block) {
            chain_.blocks_.push_back(op.block);
            chain_.first_op_.push_back(static_cast<std::uint32_t>(i));
        }
        if (op.type == "producer_reward") {
            std::string producer = string_member(op.value.get(), "producer");
            chain_.witnesses_.emplace(op.block, producer);
        }
    }
    chain_.first_op_.push_back(static_cast<std::uint32_t>(chain_.ops_.size()));
    chain_.witness_names_.assign(witness_names_.begin(), witness_names_.end());
    if (chain_.witness_names_.empty()) chain_.witness_names_.push_back("initminer");

    build_histories(final_index);

    chain_.stats_.ops = chain_.ops_.size();
    chain_.stats_.blocks_with_ops = chain_.blocks_.size();
    chain_.stats_.accounts = chain_.histories_.size();
    chain_.stats_.known_block_ids = chain_.ids_.size();
    chain_.stats_.full_blocks = chain_.full_blocks_.size();
}

// Sequence numbers are node-local, but the fixtures' windows name real ones:
// entries seen in account-history files keep their real number; every other
// operation of the account is numbered in between, in chain order, spread as
// its block lies between the neighbouring known entries.
void RealChainLoader::build_histories(const std::vector<std::size_t>& final_index) {
    std::unordered_map<std::string, std::vector<std::uint32_t>> members;
    for (std::size_t i = 0; i < chain_.ops_.size(); ++i) {
        const RealOp& op = chain_.ops_[i];
        for (const auto& account : impacted_accounts(op.type, op.value.get()))
            members[account].push_back(static_cast<std::uint32_t>(i));
    }
    std::unordered_map<std::string, std::map<std::uint32_t, std::uint64_t>> known;
    for (const auto& ref : history_refs_) {
        auto index = static_cast<std::uint32_t>(final_index[ref.load_index]);
        known[ref.account][index] = ref.seq;
        auto& list = members[ref.account];
        if (std::find(list.begin(), list.end(), index) == list.end()) list.push_back(index);
    }

    for (auto& [account, list] : members) {
        std::sort(list.begin(), list.end());
        const auto& known_seqs = known[account];
        std::vector<std::optional<std::uint64_t>> seqs(list.size());
        std::vector<std::size_t> anchors;
        for (std::size_t j = 0; j < list.size(); ++j) {
            auto it = known_seqs.find(list[j]);
            if (it != known_seqs.end()) {
                seqs[j] = it->second;
                anchors.push_back(j);
            }
        }
        std::vector<bool> placed(list.size(), true);
        // Segments between anchors (a virtual anchor before the first entry).
        long long previous_seq = -1;
        std::uint32_t previous_block = 0;
        std::size_t begin = 0;
        auto fill = [&](std::size_t from, std::size_t to, std::optional<std::uint64_t> next_seq,
                        std::uint32_t next_block) {
            std::size_t count = to - from;
            if (count == 0) return;
            if (next_seq && static_cast<long long>(*next_seq) - previous_seq - 1 < static_cast<long long>(count)) {
                for (std::size_t j = from; j < to; ++j) placed[j] = false;
                chain_.stats_.unplaced_history_entries += count;
                return;
            }
            long long last = previous_seq;
            for (std::size_t j = from; j < to; ++j) {
                long long candidate = last + 1;
                if (next_seq) {
                    std::uint32_t block = chain_.ops_[list[j]].block;
                    long long span_seq = static_cast<long long>(*next_seq) - previous_seq;
                    long long span_block = std::max<long long>(1, static_cast<long long>(next_block) - previous_block);
                    long long ideal =
                        previous_seq + span_seq * (static_cast<long long>(block) - previous_block) / span_block;
                    long long room_end = static_cast<long long>(*next_seq) - static_cast<long long>(to - j);
                    candidate = std::max(candidate, std::min(ideal, room_end));
                }
                seqs[j] = static_cast<std::uint64_t>(candidate);
                last = candidate;
            }
        };
        for (std::size_t anchor : anchors) {
            fill(begin, anchor, seqs[anchor], chain_.ops_[list[anchor]].block);
            previous_seq = static_cast<long long>(*seqs[anchor]);
            previous_block = chain_.ops_[list[anchor]].block;
            begin = anchor + 1;
        }
        fill(begin, list.size(), std::nullopt, 0);

        auto& history = chain_.histories_[account];
        for (std::size_t j = 0; j < list.size(); ++j)
            if (placed[j]) history.push_back({*seqs[j], list[j]});
    }
}

std::span<const RealOp> RealChain::ops_of(std::uint32_t block) const {
    auto it = std::lower_bound(blocks_.begin(), blocks_.end(), block);
    if (it == blocks_.end() || *it != block) return {};
    auto position = static_cast<std::size_t>(it - blocks_.begin());
    return std::span<const RealOp>(ops_.data() + first_op_[position], first_op_[position + 1] - first_op_[position]);
}

std::optional<std::string> RealChain::known_id(std::uint32_t block) const {
    auto it = ids_.find(block);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
}

std::int64_t RealChain::time_of(std::uint32_t block) const {
    if (times_.empty()) return 1458835200 + 3 * static_cast<std::int64_t>(block);
    auto after = times_.lower_bound(block);
    if (after != times_.end() && after->first == block) return after->second;
    if (after == times_.begin()) return after->second - 3 * static_cast<std::int64_t>(after->first - block);
    auto before = std::prev(after);
    return before->second + 3 * static_cast<std::int64_t>(block - before->first);
}

std::string RealChain::witness_of(std::uint32_t block) const {
    auto it = witnesses_.find(block);
    if (it != witnesses_.end()) return it->second;
    return witness_names_[block % witness_names_.size()];
}

std::optional<std::string> RealChain::merkle_root_of(std::uint32_t block) const {
    auto it = merkle_roots_.find(block);
    if (it == merkle_roots_.end()) return std::nullopt;
    return it->second;
}

const json_t* RealChain::full_block(std::uint32_t block) const {
    auto it = full_blocks_.find(block);
    return it == full_blocks_.end() ? nullptr : it->second.get();
}

std::span<const HistoryEntry> RealChain::history_of(const std::string& account) const {
    auto it = histories_.find(account);
    if (it == histories_.end()) return {};
    return it->second;
}

}  // namespace sim
