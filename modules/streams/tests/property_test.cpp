// streams/tests/property_test.cpp — random Register / Upsert / Delete / ClearState / Remove /
// collect sequences, multi-command entries (committed or rolled back) and restarts, checked
// after every step against a std::map model in which a reset simply erases the query's rows:
// every query by name and id, query pages, every partition's rows (all, a random page, a full
// paging, a random key set), counts, partitions, has_garbage and the tables' sizes.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "harness.hpp"
#include "queen/core/rng.hpp"

namespace queen::streams {
namespace {

using testing::bytes;
using testing::Harness;
using testing::must;
using testing::text;

const std::vector<std::string> model_names{"a", "ab", "b", std::string("n\0", 2), "\xff"};
const std::vector<std::string> model_hashes{"h1", "h2", "h3"};
const std::vector<std::string> model_queues{"src", "sink", "s2"};
const std::vector<std::uint64_t> model_partitions{0, 1, 7, UINT64_MAX};
const std::vector<std::string> model_keys{
    "k", "k1", "k10", "k2", "kk", std::string("\0", 1), "x/y", "x", "\x01", "\xfe\xff"};
const std::vector<std::string> model_prefixes{"", "", "k", "k1", "x", "\xfe", "z"};

struct ModelRow {
    std::string value;
    std::int64_t updated_at = 0;
};

/// What reads should see. A reset, ClearState or Remove erases the query's rows here at once;
/// the real state keeps them as garbage, which the model only counts (`garbage_rows`): what
/// collect() removes is invisible to reads, so its order is not part of the contract.
struct Model {
    std::map<std::string, Query> queries;  // by name
    /// Live rows: (number, partition, key) -> row.
    std::map<std::tuple<std::uint64_t, std::uint64_t, std::string>, ModelRow> rows;
    std::uint64_t garbage_rows = 0;
    std::uint64_t next_number = 1;

    [[nodiscard]] const Query* by_id(const std::string& id) const {
        for (const auto& [name, query] : queries) {
            if (query.query_id == id) {
                return &query;
            }
        }
        return nullptr;
    }
    void retire(std::uint64_t number) {
        for (auto it = rows.begin(); it != rows.end();) {
            if (std::get<0>(it->first) == number) {
                it = rows.erase(it);
                ++garbage_rows;
            } else {
                ++it;
            }
        }
    }

    RegisterResult apply(const Register& c, std::int64_t now) {
        RegisterResult result;
        if (c.new_query_id.empty()) {
            result.status = Status::invalid;
            return result;
        }
        const auto it = queries.find(c.name);
        if (it == queries.end()) {
            if (by_id(c.new_query_id) != nullptr) {
                result.status = Status::invalid;
                return result;
            }
            queries[c.name] = Query{c.name,
                                    c.new_query_id,
                                    c.source_queue,
                                    c.sink_queue,
                                    c.config_hash,
                                    next_number++,
                                    1,
                                    TimestampMs{now},
                                    TimestampMs{now}};
            result.status = Status::fresh;
        } else if (it->second.config_hash != c.config_hash && !c.reset) {
            result.status = Status::conflict;
        } else {
            Query& query = it->second;
            result.status = Status::reused;
            if (query.config_hash != c.config_hash) {
                retire(query.number);
                ++query.epoch;
                query.config_hash = c.config_hash;
                result.status = Status::reset;
            }
            query.source_queue = c.source_queue;
            query.sink_queue = c.sink_queue;
            query.updated_at = TimestampMs{now};
        }
        const Query& query = queries.at(c.name);
        result.query_id = query.query_id;
        result.config_hash = query.config_hash;
        result.epoch = query.epoch;
        return result;
    }
    WriteResult apply(const Upsert& c, std::int64_t now) {
        WriteResult result;
        if (c.key.empty()) {
            result.status = Status::invalid;
            return result;
        }
        const Query* query = by_id(c.query_id);
        if (query == nullptr) {
            result.status = Status::unknown_query;
            return result;
        }
        const std::tuple<std::uint64_t, std::uint64_t, std::string> at{query->number, c.partition,
                                                                       c.key};
        result.existed = rows.contains(at);
        rows[at] = ModelRow{text(c.value), now};
        return result;
    }
    WriteResult apply(const Delete& c, std::int64_t /*now*/) {
        WriteResult result;
        if (c.key.empty()) {
            result.status = Status::invalid;
            return result;
        }
        const Query* query = by_id(c.query_id);
        if (query == nullptr) {
            result.status = Status::unknown_query;
            return result;
        }
        result.existed = rows.erase({query->number, c.partition, c.key}) == 1;
        return result;
    }
    WriteResult apply(const ClearState& c, std::int64_t now) {
        WriteResult result;
        const auto it = queries.find(c.name);
        if (it == queries.end()) {
            result.status = Status::unknown_query;
            return result;
        }
        const std::uint64_t before = garbage_rows;
        retire(it->second.number);
        result.existed = garbage_rows != before;
        ++it->second.epoch;
        it->second.updated_at = TimestampMs{now};
        return result;
    }
    WriteResult apply(const Remove& c, std::int64_t /*now*/) {
        WriteResult result;
        const auto it = queries.find(c.name);
        if (it == queries.end()) {
            result.status = Status::unknown_query;
            return result;
        }
        const std::uint64_t before = garbage_rows;
        retire(it->second.number);
        result.existed = garbage_rows != before;
        queries.erase(it);
        return result;
    }
    CollectResult collect(std::size_t limit) {
        CollectResult result;
        result.deleted = std::min<std::uint64_t>(limit, garbage_rows);
        garbage_rows -= result.deleted;
        result.is_complete = garbage_rows == 0;
        return result;
    }

    [[nodiscard]] std::vector<Row> live(std::uint64_t number, std::uint64_t partition,
                                        const std::string& prefix, const std::string& after) const {
        std::vector<Row> out;
        for (const auto& [at, row] : rows) {
            const auto& [n, p, key] = at;
            if (n == number && p == partition && key.starts_with(prefix) && key > after) {
                out.push_back(Row{key, bytes(row.value), TimestampMs{row.updated_at}});
            }
        }
        return out;
    }
};

using Command = std::variant<Register, Upsert, Delete, ClearState, Remove>;

template <class T>
const T& pick(Rng& rng, const std::vector<T>& values) {
    return values[rng.below(values.size())];
}

/// Ids the commands use: the model's, ones removed queries had, and never-used ones.
struct Ids {
    std::vector<std::string> seen{"never"};
    std::uint64_t next = 1;
    std::string fresh() {
        seen.push_back("id-" + std::to_string(next++));
        return seen.back();
    }
};

Command random_command(Rng& rng, const Model& model, Ids& ids) {
    const auto kind = rng.below(100);
    if (kind < 20) {
        std::string id = ids.fresh();
        const auto roll = rng.below(30);
        if (roll == 0) {
            id.clear();  // refused
        } else if (roll < 3) {
            id = pick(rng, ids.seen);  // taken (refused for a new name) or free again
        }
        return Register{pick(rng, model_names),
                        pick(rng, model_queues),
                        rng.below(3) == 0 ? std::string() : pick(rng, model_queues),
                        pick(rng, model_hashes),
                        rng.below(2) == 0,
                        std::move(id)};
    }
    if (kind < 27) {
        return ClearState{pick(rng, model_names)};
    }
    if (kind < 31) {
        return Remove{pick(rng, model_names)};
    }
    // Mostly the id of a live query, sometimes one that is gone or never was.
    std::string id = pick(rng, ids.seen);
    if (!model.queries.empty() && rng.below(5) != 0) {
        auto it = model.queries.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(rng.below(model.queries.size())));
        id = it->second.query_id;
    }
    std::string key = pick(rng, model_keys);
    if (rng.below(100) == 0) {
        key.clear();  // refused
    }
    const std::uint64_t partition = pick(rng, model_partitions);
    if (kind < 80) {
        return Upsert{std::move(id), partition, std::move(key),
                      bytes(rng.below(10) == 0 ? "" : "v" + std::to_string(rng.below(1000)))};
    }
    return Delete{std::move(id), partition, std::move(key)};
}

std::string describe(const Command& command) {
    return std::visit(
        [](const auto& c) {
            using T = std::decay_t<decltype(c)>;
            std::string out;
            if constexpr (std::is_same_v<T, Register>) {
                out = "register " + to_hex(as_bytes(c.name)) + " hash=" + c.config_hash +
                      " reset=" + std::to_string(c.reset) + " id=" + c.new_query_id;
            } else if constexpr (std::is_same_v<T, Upsert> || std::is_same_v<T, Delete>) {
                out = std::string(std::is_same_v<T, Upsert> ? "upsert " : "delete ") + c.query_id +
                      "/" + std::to_string(c.partition) + "/" + to_hex(as_bytes(c.key));
            } else {
                out = std::string(std::is_same_v<T, ClearState> ? "clear " : "remove ") +
                      to_hex(as_bytes(c.name));
            }
            return out;
        },
        command);
}

void check_result(const RegisterResult& actual, const RegisterResult& expected) {
    REQUIRE(actual.status == expected.status);
    if (expected.status != Status::invalid) {
        REQUIRE(actual.query_id == expected.query_id);
        REQUIRE(actual.config_hash == expected.config_hash);
        REQUIRE(actual.epoch == expected.epoch);
    }
    REQUIRE(actual.message.empty() ==
            (expected.status != Status::invalid && expected.status != Status::conflict));
}
void check_result(const WriteResult& actual, const WriteResult& expected) {
    REQUIRE(actual.status == expected.status);
    REQUIRE(actual.existed == expected.existed);
    REQUIRE(actual.message.empty() == (expected.status == Status::ok));
}

void check_rows(const Tables& tables, const store::Txn& txn, const Model& model, const Query& query,
                std::uint64_t partition, Rng& rng) {
    INFO("rows of " << query.query_id << "/" << partition);
    const auto all = model.live(query.number, partition, "", "");
    REQUIRE(must(list_rows(tables, txn, query.query_id, partition, "", "", 1000)).rows == all);

    // One random page.
    const std::string prefix = pick(rng, model_prefixes);
    const std::string after = rng.below(3) == 0 ? std::string() : pick(rng, model_keys);
    const auto limit = static_cast<std::uint32_t>(1 + rng.below(4));
    INFO("prefix=" << to_hex(as_bytes(prefix)) << " after=" << to_hex(as_bytes(after))
                   << " limit=" << limit);
    auto expected = model.live(query.number, partition, prefix, after);
    std::string next_after;
    if (expected.size() > limit) {
        expected.resize(limit);
        next_after = expected.back().key;
    }
    const RowPage page =
        must(list_rows(tables, txn, query.query_id, partition, prefix, after, limit));
    REQUIRE(page.rows == expected);
    REQUIRE(page.next_after == next_after);

    // Every page, following next_after: exactly the rows with the prefix, each once.
    std::vector<Row> paged;
    std::string cursor;
    for (int pages = 0;; ++pages) {
        REQUIRE(pages <= static_cast<int>(model_keys.size()));
        const RowPage next =
            must(list_rows(tables, txn, query.query_id, partition, prefix, cursor, limit));
        paged.insert(paged.end(), next.rows.begin(), next.rows.end());
        if (next.next_after.empty()) {
            break;
        }
        cursor = next.next_after;
    }
    REQUIRE(paged == model.live(query.number, partition, prefix, ""));

    // A random set of keys.
    std::vector<std::string> keys;
    for (auto count = rng.below(4); count > 0; --count) {
        keys.push_back(pick(rng, model_keys));
    }
    std::vector<Row> wanted;
    for (const auto& row : all) {
        if (std::find(keys.begin(), keys.end(), row.key) != keys.end()) {
            wanted.push_back(row);
        }
    }
    REQUIRE(must(get_rows(tables, txn, query.query_id, partition, keys)) == wanted);
}

void check_reads(Harness& h, const Model& model, const Ids& ids, Rng& rng) {
    auto txn = must(h.env->begin_read());
    const Tables& tables = h.tables();
    for (const auto& name : model_names) {
        INFO("query " << to_hex(as_bytes(name)));
        const auto it = model.queries.find(name);
        const auto got = must(find_query(tables, txn, name));
        REQUIRE(got.has_value() == (it != model.queries.end()));
        if (got.has_value()) {
            REQUIRE(*got == it->second);
        }
    }
    for (const auto& id : ids.seen) {
        INFO("query_id " << id);
        const Query* query = model.by_id(id);
        const auto got = must(find_query_by_id(tables, txn, id));
        REQUIRE(got.has_value() == (query != nullptr));
        if (query != nullptr) {
            REQUIRE(*got == *query);
        }
    }
    // Query pages of a random size, followed to the end.
    std::vector<Query> listed;
    const auto limit = static_cast<std::uint32_t>(1 + rng.below(3));
    std::string after;
    for (int pages = 0;; ++pages) {
        REQUIRE(pages <= static_cast<int>(model_names.size()));
        const QueryPage page = must(list_queries(tables, txn, after, limit));
        listed.insert(listed.end(), page.queries.begin(), page.queries.end());
        if (page.next_after.empty()) {
            break;
        }
        REQUIRE(page.queries.size() == limit);
        after = page.next_after;
    }
    std::vector<Query> expected_queries;
    for (const auto& [name, query] : model.queries) {
        expected_queries.push_back(query);
    }
    REQUIRE(listed == expected_queries);

    std::uint64_t live_rows = 0;
    for (const auto& [name, query] : model.queries) {
        std::vector<std::uint64_t> partitions;
        std::vector<PartitionRows> per_partition;
        std::uint64_t count = 0;
        for (const auto partition : model_partitions) {
            const auto size = model.live(query.number, partition, "", "").size();
            if (size > 0) {
                partitions.push_back(partition);
                per_partition.push_back(PartitionRows{partition, size});
            }
            count += size;
            check_rows(tables, txn, model, query, partition, rng);
        }
        REQUIRE(must(count_rows(tables, txn, query.query_id)) == count);
        REQUIRE(must(list_partitions(tables, txn, query.query_id)) == partitions);
        REQUIRE(must(count_rows_per_partition(tables, txn, query.query_id)) == per_partition);
        live_rows += count;
    }
    REQUIRE(must(h.streams->has_garbage(txn)) == (model.garbage_rows > 0));
    REQUIRE(must(txn.stats(tables.rows)).entries == live_rows + model.garbage_rows);
    REQUIRE(must(txn.stats(tables.queries)).entries == model.queries.size());
    REQUIRE(must(txn.stats(tables.query_ids)).entries == model.queries.size());
}

/// Runs one command against the real state and the model and compares the results.
void run_one(Harness& h, store::WriteTxn& txn, store::UndoLog& undo, LogIndex index, Model& model,
             const Command& command) {
    std::visit(
        [&](const auto& c) {
            const auto actual = must(h.streams->apply(txn, undo, c, index, h.now()));
            check_result(actual, model.apply(c, h.now_ms));
        },
        command);
}

TEST_CASE("streams: random commands, resets, collects and restarts agree with a std::map model",
          "[streams][property]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    const auto steps = queen::testing::env_int("QUEEN_PROPERTY_STEPS", 2000);
    Rng rng(seed);
    Harness h;
    Model model;
    Ids ids;

    for (std::int64_t step = 0; step < steps; ++step) {
        INFO("step " << step << " now=" << h.now_ms);
        const auto roll = rng.below(100);
        if (roll < 10) {
            h.advance_ms(static_cast<std::int64_t>(rng.below(50)));
        } else if (roll < 18) {
            const auto limit = static_cast<std::size_t>(rng.below(6));
            INFO("collect limit=" << limit);
            const CollectResult actual = h.collect(limit);
            const CollectResult expected = model.collect(limit);
            REQUIRE(actual.deleted == expected.deleted);
            REQUIRE(actual.is_complete == expected.is_complete);
        } else if (roll < 19) {
            h.reopen();
        } else if (roll < 27) {
            // Several commands in one entry (a cycle), committed or rolled back.
            const bool rollback = rng.below(2) == 0;
            const auto count = 2 + rng.below(4);
            Model scratch = model;
            std::vector<Command> commands;
            for (std::uint64_t i = 0; i < count; ++i) {
                commands.push_back(random_command(rng, scratch, ids));
            }
            h.entry(
                [&](store::WriteTxn& txn, store::UndoLog& undo, LogIndex index) {
                    for (const auto& command : commands) {
                        INFO((rollback ? "rolled back: " : "entry: ") << describe(command));
                        run_one(h, txn, undo, index, scratch, command);
                    }
                    return 0;
                },
                rollback);
            if (!rollback) {
                model = std::move(scratch);
            }
        } else {
            const Command command = random_command(rng, model, ids);
            INFO(describe(command));
            h.entry([&](store::WriteTxn& txn, store::UndoLog& undo, LogIndex index) {
                run_one(h, txn, undo, index, model, command);
                return 0;
            });
        }
        check_reads(h, model, ids, rng);
    }
    // collect() takes every dead row away in the end, whatever the limit.
    while (!h.collect(7).is_complete) {
    }
    model.collect(SIZE_MAX);
    check_reads(h, model, ids, rng);
    REQUIRE_FALSE(h.has_garbage());
}

}  // namespace
}  // namespace queen::streams
