// kv/tests/property_test.cpp — random Set/Delete/Check/expire sequences, multi-command entries
// (committed or rolled back), time jumps and restarts, checked after every step against a
// std::map model: every get, list page, full paging, list_buckets, next_expiry and table sizes.
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "harness.hpp"
#include "queen/core/rng.hpp"

namespace queen::kv {
namespace {

using testing::bytes;
using testing::Harness;
using testing::must;
using testing::text;

const std::vector<std::string> model_buckets{"a", "ab", "b\xff"};
const std::vector<std::string> model_keys{"k",   "k1", "k10",  "k2",       "kk",
                                          "x/y", "x",  "\x01", "\xfe\xff", "\x7f"};
const std::vector<std::string> model_prefixes{"", "", "k", "k1", "x", "\xfe", "z"};

struct ModelRecord {
    std::string value;
    std::uint64_t version = 0;
    std::int64_t updated_at = 0;
    std::int64_t expires_at = 0;  // 0 = never
};

/// What the state should hold: every stored record, live or expired but not yet expired away,
/// keyed by (bucket, key) in the entries table's order.
struct Model {
    std::map<std::pair<std::string, std::string>, ModelRecord> records;

    static bool is_live(const ModelRecord& record, std::int64_t now) {
        return record.expires_at == 0 || record.expires_at > now;
    }
    [[nodiscard]] std::uint64_t live_version(const std::string& bucket, const std::string& key,
                                             std::int64_t now) const {
        const auto it = records.find({bucket, key});
        return it != records.end() && is_live(it->second, now) ? it->second.version : 0;
    }

    WriteResult apply(const Set& command, std::uint64_t index, std::int64_t now) {
        WriteResult result;
        if (command.ttl_ms < 0 || command.key.empty()) {
            result.status = Status::invalid;
            return result;
        }
        const std::uint64_t current = live_version(command.bucket, command.key, now);
        if (command.expected_version.has_value() && *command.expected_version != current) {
            result.status = Status::version_mismatch;
            result.version = current;
            return result;
        }
        records[{command.bucket, command.key}] = ModelRecord{
            text(command.value), index, now, command.ttl_ms > 0 ? now + command.ttl_ms : 0};
        result.version = index;
        return result;
    }
    WriteResult apply(const Delete& command, std::int64_t now) {
        WriteResult result;
        const std::uint64_t current = live_version(command.bucket, command.key, now);
        if (command.expected_version.has_value() && *command.expected_version != current) {
            result.status = Status::version_mismatch;
            result.version = current;
            return result;
        }
        if (current != 0) {
            records.erase({command.bucket, command.key});
            result.existed = true;
        }
        return result;
    }
    WriteResult apply(const Check& command, std::int64_t now) const {
        WriteResult result;
        const std::uint64_t current = live_version(command.bucket, command.key, now);
        if (command.expected_version != current) {
            result.status = Status::version_mismatch;
            result.version = current;
            return result;
        }
        result.version = command.expected_version;
        return result;
    }
    ExpireResult expire(std::int64_t now, std::size_t limit) {
        // Due records in kv.expiry order: time, then bucket, then key.
        std::map<std::tuple<std::int64_t, std::string, std::string>, int> due;
        for (const auto& [name, record] : records) {
            if (record.expires_at != 0 && record.expires_at <= now) {
                due.emplace(std::tuple{record.expires_at, name.first, name.second}, 0);
            }
        }
        ExpireResult result;
        for (const auto& [order, unused] : due) {
            if (result.deleted == limit) {
                result.is_complete = false;
                break;
            }
            records.erase({std::get<1>(order), std::get<2>(order)});
            ++result.deleted;
        }
        return result;
    }
    [[nodiscard]] std::optional<TimestampMs> next_expiry() const {
        std::optional<TimestampMs> earliest;
        for (const auto& [name, record] : records) {
            if (record.expires_at != 0 &&
                (!earliest || TimestampMs{record.expires_at} < *earliest)) {
                earliest = TimestampMs{record.expires_at};
            }
        }
        return earliest;
    }
    [[nodiscard]] std::vector<BucketInfo> buckets() const {
        std::vector<BucketInfo> out;
        for (const auto& [name, record] : records) {
            if (out.empty() || out.back().bucket != name.first) {
                out.push_back(BucketInfo{name.first, 0});
            }
            ++out.back().keys;
        }
        return out;
    }
    [[nodiscard]] std::vector<Entry> live(const std::string& bucket, const std::string& prefix,
                                          const std::string& after, std::int64_t now) const {
        std::vector<Entry> out;
        for (const auto& [name, record] : records) {
            if (name.first == bucket && name.second.starts_with(prefix) && name.second > after &&
                is_live(record, now)) {
                out.push_back(Entry{name.second, bytes(record.value), record.version,
                                    TimestampMs{record.updated_at},
                                    TimestampMs{record.expires_at}});
            }
        }
        return out;
    }
    [[nodiscard]] ListPage list(const std::string& bucket, const std::string& prefix,
                                const std::string& after, std::uint32_t limit,
                                std::int64_t now) const {
        ListPage page;
        page.entries = live(bucket, prefix, after, now);
        if (page.entries.size() > limit) {
            page.entries.resize(limit);
            page.next_after = page.entries.back().key;
        }
        return page;
    }
};

using Command = std::variant<Set, Delete, Check>;

template <class T>
const T& pick(Rng& rng, const std::vector<T>& values) {
    return values[rng.below(values.size())];
}

Command random_command(Rng& rng, const Model& model, std::int64_t now) {
    const std::string bucket = pick(rng, model_buckets);
    std::string key = pick(rng, model_keys);
    // The expected version: none, "absent", the key's stored version (live or expired: an
    // expired one must mismatch), or a wrong one.
    std::optional<std::uint64_t> expected;
    const auto roll = rng.below(20);
    if (roll < 3) {
        expected = 0;
    } else if (roll < 8) {
        const auto it = model.records.find({bucket, key});
        expected =
            it != model.records.end() ? it->second.version : model.live_version(bucket, key, now);
    } else if (roll < 9) {
        expected = 1 + rng.below(50);
    }
    const auto kind = rng.below(100);
    if (kind < 60) {
        std::int64_t ttl_ms = rng.below(2) == 0 ? 0 : static_cast<std::int64_t>(1 + rng.below(200));
        if (rng.below(100) == 0) {
            ttl_ms = -1;  // refused
        }
        if (rng.below(100) == 0) {
            key.clear();  // refused
        }
        return Set{bucket, key, bytes("v" + std::to_string(rng.below(1000))), expected, ttl_ms};
    }
    if (kind < 85) {
        return Delete{bucket, key, expected};
    }
    return Check{bucket, key, expected.value_or(0)};
}

std::string describe(const Command& command) {
    return std::visit(
        [](const auto& c) {
            using T = std::decay_t<decltype(c)>;
            std::string out = std::is_same_v<T, Set>      ? "set"
                              : std::is_same_v<T, Delete> ? "delete"
                                                          : "check";
            out += " " + to_hex(as_bytes(c.bucket)) + "/" + to_hex(as_bytes(c.key));
            if constexpr (std::is_same_v<T, Check>) {
                out += " expected=" + std::to_string(c.expected_version);
            } else {
                if (c.expected_version.has_value()) {
                    out += " expected=" + std::to_string(*c.expected_version);
                }
            }
            if constexpr (std::is_same_v<T, Set>) {
                out += " ttl=" + std::to_string(c.ttl_ms);
            }
            return out;
        },
        command);
}

void check_result(const WriteResult& actual, const WriteResult& expected) {
    REQUIRE(actual.status == expected.status);
    if (expected.status != Status::invalid) {
        REQUIRE(actual.version == expected.version);
        REQUIRE(actual.existed == expected.existed);
    }
    REQUIRE(actual.message.empty() == (expected.status == Status::ok));
}

void check_entry(const Entry& actual, const Entry& expected) {
    INFO("key " << to_hex(as_bytes(expected.key)));
    REQUIRE(actual == expected);
}

void check_page(const ListPage& actual, const ListPage& expected) {
    REQUIRE(actual.entries.size() == expected.entries.size());
    for (std::size_t i = 0; i < actual.entries.size(); ++i) {
        check_entry(actual.entries[i], expected.entries[i]);
    }
    REQUIRE(actual.next_after == expected.next_after);
}

void check_reads(Harness& h, const Model& model, Rng& rng) {
    const std::int64_t now = h.now_ms;
    auto txn = must(h.env->begin_read());
    const Tables& tables = h.kv->tables();
    for (const auto& bucket : model_buckets) {
        for (const auto& key : model_keys) {
            const auto got = must(get(tables, txn, bucket, key, TimestampMs{now}));
            const auto it = model.records.find({bucket, key});
            const bool is_live = it != model.records.end() && Model::is_live(it->second, now);
            INFO("get " << to_hex(as_bytes(bucket)) << "/" << to_hex(as_bytes(key)));
            REQUIRE(got.has_value() == is_live);
            if (is_live) {
                check_entry(*got, Entry{key, bytes(it->second.value), it->second.version,
                                        TimestampMs{it->second.updated_at},
                                        TimestampMs{it->second.expires_at}});
            }
        }
        // One random page.
        const std::string prefix = pick(rng, model_prefixes);
        const std::string after = rng.below(3) == 0 ? std::string() : pick(rng, model_keys);
        const auto limit = static_cast<std::uint32_t>(1 + rng.below(4));
        INFO("list " << to_hex(as_bytes(bucket)) << " prefix=" << to_hex(as_bytes(prefix))
                     << " after=" << to_hex(as_bytes(after)) << " limit=" << limit);
        check_page(must(list(tables, txn, bucket, prefix, after, limit, TimestampMs{now})),
                   model.list(bucket, prefix, after, limit, now));
        // Every page, following next_after: exactly the live keys, each once.
        std::vector<std::string> paged;
        std::string cursor;
        for (int pages = 0;; ++pages) {
            REQUIRE(pages <= static_cast<int>(model_keys.size()));
            const ListPage page =
                must(list(tables, txn, bucket, prefix, cursor, limit, TimestampMs{now}));
            for (const auto& entry : page.entries) {
                paged.push_back(entry.key);
            }
            if (page.next_after.empty()) {
                break;
            }
            cursor = page.next_after;
        }
        std::vector<std::string> expected_keys;
        for (const auto& entry : model.live(bucket, prefix, "", now)) {
            expected_keys.push_back(entry.key);
        }
        REQUIRE(paged == expected_keys);
    }
    REQUIRE(must(list_buckets(tables, txn)) == model.buckets());
    REQUIRE(must(h.kv->next_expiry(txn)) == model.next_expiry());
    std::size_t with_expiry = 0;
    for (const auto& [name, record] : model.records) {
        with_expiry += record.expires_at != 0 ? 1 : 0;
    }
    REQUIRE(must(txn.stats(tables.entries)).entries == model.records.size());
    REQUIRE(must(txn.stats(tables.expiry)).entries == with_expiry);
}

WriteResult apply_real(Harness& h, store::WriteTxn& txn, store::UndoLog& undo,
                       const Command& command, LogIndex index) {
    return std::visit(
        [&](const auto& c) -> WriteResult {
            using T = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<T, Check>) {
                return must(h.kv->apply(txn, c, h.now()));
            } else {
                return must(h.kv->apply(txn, undo, c, index, h.now()));
            }
        },
        command);
}

WriteResult apply_model(Model& model, const Command& command, std::uint64_t index,
                        std::int64_t now) {
    return std::visit(
        [&](const auto& c) -> WriteResult {
            using T = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<T, Set>) {
                return model.apply(c, index, now);
            } else {
                return model.apply(c, now);
            }
        },
        command);
}

TEST_CASE("kv: random commands, expiry and restarts agree with a std::map model",
          "[kv][property]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    const auto steps = queen::testing::env_int("QUEEN_PROPERTY_STEPS", 3000);
    Rng rng(seed);
    Harness h;
    Model model;
    std::uint64_t versions_seen = 0;

    for (std::int64_t step = 0; step < steps; ++step) {
        INFO("step " << step << " now=" << h.now_ms);
        const auto roll = rng.below(100);
        if (roll < 25) {
            // Time moves: not at all, a little, or exactly onto the next expiry.
            const auto how = rng.below(4);
            if (how == 0) {
                const auto next = model.next_expiry();
                if (next.has_value() && next->value() > h.now_ms) {
                    h.now_ms = next->value();
                }
            } else if (how == 1) {
                h.advance_ms(static_cast<std::int64_t>(1 + rng.below(300)));
            } else {
                h.advance_ms(static_cast<std::int64_t>(rng.below(20)));
            }
        } else if (roll < 33) {
            const auto limit = static_cast<std::size_t>(rng.below(4));
            INFO("expire limit=" << limit);
            const ExpireResult actual = h.expire(limit);
            const ExpireResult expected = model.expire(h.now_ms, limit);
            REQUIRE(actual.deleted == expected.deleted);
            REQUIRE(actual.is_complete == expected.is_complete);
        } else if (roll < 34) {
            h.reopen();
        } else if (roll < 40) {
            // Several commands in one entry (one index), committed or rolled back.
            const bool rollback = rng.below(2) == 0;
            const auto count = 2 + rng.below(3);
            std::vector<Command> commands;
            for (std::uint64_t i = 0; i < count; ++i) {
                commands.push_back(random_command(rng, model, h.now_ms));
            }
            Model scratch = model;
            const std::uint64_t index = h.next_index;
            h.entry(
                [&](store::WriteTxn& txn, store::UndoLog& undo, LogIndex log_index) {
                    for (const auto& command : commands) {
                        INFO((rollback ? "rolled back: " : "entry: ") << describe(command));
                        check_result(apply_real(h, txn, undo, command, log_index),
                                     apply_model(scratch, command, index, h.now_ms));
                    }
                    return 0;
                },
                rollback);
            if (!rollback) {
                model = std::move(scratch);
            }
        } else {
            const Command command = random_command(rng, model, h.now_ms);
            INFO(describe(command));
            const std::uint64_t index = h.next_index;
            const WriteResult actual =
                h.entry([&](store::WriteTxn& txn, store::UndoLog& undo, LogIndex log_index) {
                    return apply_real(h, txn, undo, command, log_index);
                });
            const WriteResult expected = apply_model(model, command, index, h.now_ms);
            check_result(actual, expected);
            if (actual.status == Status::ok && std::holds_alternative<Set>(command)) {
                REQUIRE(actual.version > versions_seen);  // versions only grow
                versions_seen = actual.version;
            }
        }
        check_reads(h, model, rng);
    }
    // Every TTL runs out in the end, and expire() takes every one of them away.
    h.advance_ms(1'000'000);
    model.expire(h.now_ms, SIZE_MAX);
    while (!h.expire(7).is_complete) {
    }
    check_reads(h, model, rng);
}

}  // namespace
}  // namespace queen::kv
