// cli/commands/admin_state.cpp — `queen admin kv list|get`, `queen admin locks list|get` and
// `queen admin timers list|get`: the KV buckets and keys, lock grants and pending timers of a
// broker through the client's typed calls, printed as tables (or `--json`, in the shapes of the
// HTTP API's answers). Read-only: writes go through the API or the client. The shared output
// helpers and the command line live in admin.cpp.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "commands/admin.hpp"
#include "exit_codes.hpp"
#include "queen/client/client.hpp"

namespace queen::cli {
namespace {

using nlohmann::json;
namespace qc = queen::client;
using namespace admin_internal;

// A JSON value the broker sent as text: parsed back (it is JSON), else kept as a string.
json value_of(const std::string& json_text) {
    json value = json::parse(json_text, nullptr, false);
    return value.is_discarded() ? json(json_text) : value;
}

// An optional text (a time, an id): null when empty.
json text_or_null(const std::string& text) {
    return text.empty() ? json(nullptr) : json(text);
}

json next_after_of(const std::string& next_after) {
    return text_or_null(next_after);  // null on the last page, as the API says it
}

json kv_entry_json(const qc::KvEntry& entry) {
    return {{"bucket", entry.bucket},
            {"key", entry.key},
            {"value", value_of(entry.value_json)},
            {"version", entry.version},
            {"updatedAt", entry.updated_at},
            {"expiresAt", text_or_null(entry.expires_at)}};
}

json lock_json(const qc::LockGrant& grant) {
    return {{"name", grant.name},
            {"owner", grant.owner},
            {"token", grant.token},
            {"acquiredAt", grant.acquired_at},
            {"expiresAt", grant.expires_at}};
}

json timer_json(const qc::TimerInfo& timer) {
    return {{"id", timer.id},
            {"dueAt", timer.due_at},
            {"intervalMs", timer.interval_ms},
            {"endAt", text_or_null(timer.end_at)},
            {"fired", timer.fired},
            {"createdAt", timer.created_at},
            {"queue", timer.queue},
            {"partition", timer.partition},
            {"transactionId", text_or_null(timer.transaction_id)},
            {"traceId", text_or_null(timer.trace_id)},
            {"payload", value_of(timer.payload_json)}};
}

// A typed answer as its JSON (a failed call keeps its error).
template <class T, class ToJson>
queen::Result<json> json_of(queen::Result<T> answer, ToJson to_json) {
    if (!answer) {
        return std::move(answer).error();
    }
    return to_json(*answer);
}

// "more: <command> --after <next>" under a page that is not the last.
void print_more(const json& answer, const std::string& command) {
    const auto next = answer.find("nextAfter");
    if (next != answer.end() && next->is_string()) {
        std::cout << "more: " << command << " --after " << next->get<std::string>() << "\n";
    }
}

// One line per field of a single object: "FIELD  value". The stored JSON value
// (`json_key`) is shown as JSON, the other fields as table cells.
void print_fields(const json& object, const std::vector<std::pair<const char*, const char*>>& rows,
                  std::string_view json_key) {
    Table table{{{"FIELD"}, {"VALUE"}}};
    for (const auto& [label, key] : rows) {
        const auto found = object.find(key);
        if (found == object.end()) {
            table.add({label, "-"});
        } else {
            table.add({label, key == json_key ? found->dump() : cell(*found)});
        }
    }
    table.print();
}

void print_buckets(const json& answer) {
    Table table{{{"BUCKET"}, {"KEYS", true}}};
    for (const json& bucket : answer.value("buckets", json::array())) {
        table.add({cell(bucket, "bucket"), cell(bucket, "keys")});
    }
    table.print();
}

void print_locks(const json& answer) {
    Table table{{{"LOCK"}, {"OWNER"}, {"TOKEN", true}, {"ACQUIRED"}, {"EXPIRES"}}};
    for (const json& lock : answer.value("locks", json::array())) {
        table.add({cell(lock, "name"), cell(lock, "owner"), cell(lock, "token"),
                   cell(lock, "acquiredAt"), cell(lock, "expiresAt")});
    }
    table.print();
    print_more(answer, "queen admin locks list");
}

void print_timers(const json& answer) {
    Table table{{{"TIMER"},
                 {"DUE"},
                 {"INTERVAL_MS", true},
                 {"END"},
                 {"FIRED", true},
                 {"QUEUE"},
                 {"PARTITION"}}};
    for (const json& timer : answer.value("timers", json::array())) {
        table.add({cell(timer, "id"), cell(timer, "dueAt"), cell(timer, "intervalMs"),
                   cell(timer, "endAt"), cell(timer, "fired"), cell(timer, "queue"),
                   cell(timer, "partition")});
    }
    table.print();
    print_more(answer, "queen admin timers list");
}

}  // namespace

int admin_internal::run_kv_list(const AdminOptions& options, qc::Client& client) {
    if (options.bucket.empty() && (!options.prefix.empty() || !options.after.empty())) {
        std::cerr << "queen admin kv list: --prefix and --after need a bucket\n";
        return exit_usage;
    }
    if (options.bucket.empty()) {
        return print_answer(
            options,
            json_of(client.kv_buckets(),
                    [](const auto& buckets) {
                        json list = json::array();
                        for (const qc::KvBucket& bucket : buckets) {
                            list.push_back({{"bucket", bucket.bucket}, {"keys", bucket.keys}});
                        }
                        return json{{"buckets", list}};
                    }),
            print_buckets);
    }
    qc::KvListQuery query;
    query.bucket = options.bucket;
    query.prefix = options.prefix;
    query.after = options.after;
    query.limit = options.limit;
    auto answer = json_of(client.kv_list(query), [](const qc::KvPage& page) {
        json keys = json::array();
        for (const qc::KvEntry& entry : page.entries) {
            keys.push_back(kv_entry_json(entry));
        }
        return json{
            {"bucket", page.bucket}, {"keys", keys}, {"nextAfter", next_after_of(page.next_after)}};
    });
    return print_answer(options, answer, [&](const json& page) {
        Table table{{{"KEY"}, {"VERSION", true}, {"UPDATED"}, {"EXPIRES"}, {"VALUE"}}};
        for (const json& entry : page.value("keys", json::array())) {
            table.add({cell(entry, "key"), cell(entry, "version"), cell(entry, "updatedAt"),
                       cell(entry, "expiresAt"), entry.value("value", json()).dump()});
        }
        table.print();
        print_more(page, "queen admin kv list " + options.bucket +
                             (options.prefix.empty() ? "" : " --prefix " + options.prefix));
    });
}

int admin_internal::run_kv_get(const AdminOptions& options, qc::Client& client) {
    return print_answer(options, json_of(client.kv_get(options.bucket, options.key), kv_entry_json),
                        [](const json& entry) {
                            print_fields(entry,
                                         {{"bucket", "bucket"},
                                          {"key", "key"},
                                          {"version", "version"},
                                          {"updated", "updatedAt"},
                                          {"expires", "expiresAt"},
                                          {"value", "value"}},
                                         "value");
                        });
}

int admin_internal::run_locks_list(const AdminOptions& options, qc::Client& client) {
    auto answer =
        json_of(client.lock_list(options.after, options.limit), [](const qc::LockPage& page) {
            json locks = json::array();
            for (const qc::LockGrant& grant : page.locks) {
                locks.push_back(lock_json(grant));
            }
            return json{{"locks", locks}, {"nextAfter", next_after_of(page.next_after)}};
        });
    return print_answer(options, answer, print_locks);
}

int admin_internal::run_locks_get(const AdminOptions& options, qc::Client& client) {
    return print_answer(options, json_of(client.lock_get(options.name), lock_json),
                        [](const json& grant) {
                            print_locks(json{{"locks", json::array({grant})}});
                        });
}

int admin_internal::run_timers_list(const AdminOptions& options, qc::Client& client) {
    auto answer =
        json_of(client.timer_list(options.after, options.limit), [](const qc::TimerPage& page) {
            json timers = json::array();
            for (const qc::TimerInfo& timer : page.timers) {
                timers.push_back(timer_json(timer));
            }
            return json{{"timers", timers}, {"nextAfter", next_after_of(page.next_after)}};
        });
    return print_answer(options, answer, print_timers);
}

int admin_internal::run_timers_get(const AdminOptions& options, qc::Client& client) {
    return print_answer(options, json_of(client.timer_get(options.name), timer_json),
                        [](const json& timer) {
                            print_fields(timer,
                                         {{"id", "id"},
                                          {"due", "dueAt"},
                                          {"interval_ms", "intervalMs"},
                                          {"end", "endAt"},
                                          {"fired", "fired"},
                                          {"created", "createdAt"},
                                          {"queue", "queue"},
                                          {"partition", "partition"},
                                          {"transaction_id", "transactionId"},
                                          {"trace_id", "traceId"},
                                          {"payload", "payload"}},
                                         "payload");
                        });
}

void admin_internal::register_state_commands(CLI::App& admin, AdminOptions& options,
                                             const AddLeaf& leaf) {
    const auto add_paging = [&options](CLI::App* list, const char* after_help) {
        list->add_option("--after", options.after, after_help);
        list->add_option("--limit", options.limit, "Page size")
            ->check(CLI::Range(1, 1000))
            ->capture_default_str();
    };

    auto* kv = admin.add_subcommand("kv", "KV buckets and keys (read-only)");
    kv->require_subcommand(1);
    auto* kv_list = leaf(kv, "list",
                         "Without a bucket: every bucket with its key count; with one: its keys "
                         "with version, times and value, in key order",
                         AdminCommand::kv_list);
    kv_list->add_option("bucket", options.bucket, "Bucket");
    kv_list->add_option("--prefix", options.prefix, "Only keys starting with this");
    add_paging(kv_list, "Start after this key (the previous page's last)");
    auto* kv_get = leaf(kv, "get", "One key: its value, version and times (exit 1 when absent)",
                        AdminCommand::kv_get);
    kv_get->add_option("bucket", options.bucket, "Bucket")->required();
    kv_get->add_option("key", options.key, "Key")->required();

    auto* locks = admin.add_subcommand("locks", "Lock grants (read-only)");
    locks->require_subcommand(1);
    add_paging(leaf(locks, "list", "Locks held now: owner, fencing token, acquired and expiry",
                    AdminCommand::locks_list),
               "Start after this lock name");
    leaf(locks, "get", "One lock's current grant (exit 1 when free)", AdminCommand::locks_get)
        ->add_option("name", options.name, "Lock name")
        ->required();

    auto* timers = admin.add_subcommand("timers", "Pending timers (read-only)");
    timers->require_subcommand(1);
    add_paging(leaf(timers, "list",
                    "Pending timers in id order (delayed pushes too: ids starting with ~delay.)",
                    AdminCommand::timers_list),
               "Start after this timer id");
    leaf(timers, "get", "One timer with the message it delivers (exit 1 when none)",
         AdminCommand::timers_get)
        ->add_option("id", options.name, "Timer id")
        ->required();
}

}  // namespace queen::cli
