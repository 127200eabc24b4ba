// tools/json_read_bench/json_read_bench.cpp — issue 22: the one JSON reader (core json_scan and
// json_cursor: the api's parse_push / parse_ack_batch / parse_transaction, the client's pop
// reader), the nlohmann DOM reference of the api tests and simdjson on-demand twins of them, on
// the same bodies in the same process, plus a differential check of what each one accepts.
// Built only with -DQUEEN_JSON_EVAL=ON; usage: docs/benchmarks.md.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bodies.hpp"
#include "json.hpp"
#include "parse.hpp"
#include "queen/client/connection.hpp"
#include "queen/client/protocol.hpp"
#include "queen/core/json_scan.hpp"
#include "queen/core/rng.hpp"
#include "reference_parse.hpp"
#include "simd_readers.hpp"

namespace queen::json_eval {
namespace {

constexpr std::int64_t now_ms = 1'764'491'234'567;

class CountingRandom final : public api::RandomSource {
public:
    void fill(std::uint8_t* data, std::size_t size) override {
        for (std::size_t i = 0; i < size; ++i) {
            data[i] = static_cast<std::uint8_t>(rng_.next());
        }
    }

private:
    Rng rng_{7};
};

/// One reader of one body: returns whether it read it (true is what the measurement needs).
struct Variant {
    std::string name;
    std::function<bool()> run;
};

/// Everything a variant needs, shared by all of them (storage reused as in the real callers).
struct Readers {
    api::ApiOptions options;
    CountingRandom random;
    SimdReaders simd;
    client::PopRequest pop_request;
    client::PopResult pop_result;
    client::HttpResponse response;
    client::HttpRequest http;

    Readers() {
        pop_request.queue = "orders";
        http.target = "/api/v1/pop/queue/orders?batch=100";
    }
};

/// The nlohmann reference for a pop answer: a DOM, then the fields (data re-serialized).
bool nlohmann_pop(std::string_view body, client::PopResult& result) {
    try {
        const nlohmann::json answer = nlohmann::json::parse(body);
        const auto text = [](const nlohmann::json& object, const char* key) {
            const auto found = object.find(key);
            if (found == object.end() || found->is_null()) {
                return std::string{};
            }
            return found->is_string() ? found->get<std::string>() : found->dump();
        };
        result.partition = text(answer, "partition");
        result.partition_id = text(answer, "partitionId");
        result.lease_id = text(answer, "leaseId");
        result.consumer_group = text(answer, "consumerGroup");
        result.lease_expires_at = text(answer, "leaseExpiresAt");
        result.partitions_claimed = answer.value("partitionsClaimed", std::int64_t{0});
        const nlohmann::json& messages = answer.at("messages");
        result.messages.resize(messages.size());
        for (std::size_t i = 0; i < messages.size(); ++i) {
            const nlohmann::json& m = messages[i];
            client::Message& message = result.messages[i];
            message.id = text(m, "id");
            message.transaction_id = text(m, "transactionId");
            message.trace_id = text(m, "traceId");
            message.data_json = m.at("data").dump();
            message.producer_sub = text(m, "producerSub");
            message.created_at = text(m, "createdAt");
            message.partition_id = text(m, "partitionId");
            message.partition = text(m, "partition");
            message.lease_id = text(m, "leaseId");
            message.consumer_group = text(m, "consumerGroup");
            message.retry_count = m.value("retryCount", std::int64_t{0});
            message.queue = "orders";
        }
        return true;
    } catch (const nlohmann::json::exception&) {
        return false;
    }
}

std::vector<Variant> variants_of(const Body& body, Readers& r) {
    const std::string_view text = body.text;
    std::vector<Variant> out;
    const Check checks[] = {Check::skip, Check::walk, Check::scan};
    switch (body.kind) {
        case BodyKind::push:
            out.push_back(
                {"fast", [&r, text] {
                     return api::detail::parse_push(text, r.options, r.random, now_ms).has_value();
                 }});
            out.push_back({"nlohmann", [&r, text] {
                               return api::reference::parse_push(text, r.options, r.random, now_ms)
                                   .has_value();
                           }});
            for (const Check check : checks) {
                out.push_back(
                    {"sj-" + std::string(check_name(check)), [&r, text, check] {
                         return r.simd.push(text, r.options, r.random, now_ms, check).has_value();
                     }});
            }
            break;
        case BodyKind::ack_batch:
            out.push_back({"fast", [&r, text] {
                               return api::detail::parse_ack_batch(text, r.options).has_value();
                           }});
            out.push_back({"nlohmann", [&r, text] {
                               return api::reference::parse_ack_batch(text, r.options).has_value();
                           }});
            for (const Check check : checks) {
                out.push_back({"sj-" + std::string(check_name(check)), [&r, text, check] {
                                   return r.simd.ack(text, true, r.options, check).has_value();
                               }});
            }
            break;
        case BodyKind::transaction:
            out.push_back({"fast", [&r, text] {
                               return api::detail::parse_transaction(text, r.options, r.random,
                                                                     now_ms)
                                   .has_value();
                           }});
            out.push_back({"nlohmann", [&r, text] {
                               return api::reference::parse_transaction(text, r.options, r.random,
                                                                        now_ms)
                                   .has_value();
                           }});
            for (const Check check : checks) {
                out.push_back({"sj-" + std::string(check_name(check)), [&r, text, check] {
                                   return r.simd
                                       .transaction(text, r.options, r.random, now_ms, check)
                                       .has_value();
                               }});
            }
            break;
        case BodyKind::pop_answer:
            out.push_back({"fast", [&r, &body] {
                               r.response.status = 200;
                               if (r.response.body.data() != body.text.data()) {
                                   r.response.body = body.text;
                               }
                               return client::read_pop_answer(r.http, r.response, r.pop_request,
                                                              r.pop_result)
                                   .has_value();
                           }});
            out.push_back({"nlohmann", [&r, text] { return nlohmann_pop(text, r.pop_result); }});
            for (const Check check : checks) {
                out.push_back({"sj-" + std::string(check_name(check)), [&r, text, check] {
                                   return r.simd.pop_answer(text, r.pop_request, r.pop_result,
                                                            check);
                               }});
            }
            break;
    }
    return out;
}

// ---- timing ----

double thread_cpu_ns() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
}

double wall_ns() {
    return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

struct Options {
    int runs = 21;
    double run_ms = 20;
    std::string body_filter;
    std::string readers;  ///< comma-separated reader names to time; empty: all
    std::string impl;
};

/// Times every variant of `body`: `runs` rounds, each round every variant once (the order
/// rotates per round, A/B in one process), each turn a batch of iterations of ~run_ms.
void measure(const Body& body, std::vector<Variant>& variants, const Options& options) {
    // Iterations per turn from the first variant (the reader in use today).
    for (int i = 0; i < 20; ++i) {
        for (Variant& v : variants) {
            if (!v.run()) {
                std::printf("%s: %s does not read it\n", body.name.c_str(), v.name.c_str());
                return;
            }
        }
    }
    const double start = wall_ns();
    int calibration = 0;
    while (wall_ns() - start < options.run_ms * 1e6 / 4) {
        variants[0].run();
        ++calibration;
    }
    const int iterations = std::max(4, calibration * 4);
    std::vector<std::vector<double>> wall(variants.size());
    std::vector<std::vector<double>> cpu(variants.size());
    for (int round = 0; round < options.runs; ++round) {
        for (std::size_t k = 0; k < variants.size(); ++k) {
            const std::size_t v = (k + static_cast<std::size_t>(round)) % variants.size();
            const double wall_start = wall_ns();
            const double cpu_start = thread_cpu_ns();
            for (int i = 0; i < iterations; ++i) {
                variants[v].run();
            }
            cpu[v].push_back((thread_cpu_ns() - cpu_start) / iterations);
            wall[v].push_back((wall_ns() - wall_start) / iterations);
        }
    }
    const double bytes = static_cast<double>(body.text.size());
    std::printf("\n%s: %zu bytes, %d rounds x %d iterations\n", body.name.c_str(), body.text.size(),
                options.runs, iterations);
    std::printf("  %-10s %10s %10s %10s %8s %9s %9s\n", "reader", "wall ns", "min ns", "cpu ns",
                "MB/s", "wall/fast", "cpu/fast");
    for (std::size_t v = 0; v < variants.size(); ++v) {
        // Against the first reader in the same round (turns next to each other in time), the
        // median of those ratios: a load that drifts between rounds cancels out.
        std::vector<double> wall_ratio, cpu_ratio;
        for (std::size_t round = 0; round < wall[v].size(); ++round) {
            wall_ratio.push_back(wall[v][round] / wall[0][round]);
            cpu_ratio.push_back(cpu[v][round] / cpu[0][round]);
        }
        const double w = median(wall[v]);
        const double lowest = *std::min_element(wall[v].begin(), wall[v].end());
        std::printf("  %-10s %10.0f %10.0f %10.0f %8.0f %8.2fx %8.2fx\n", variants[v].name.c_str(),
                    w, lowest, median(cpu[v]), bytes / w * 1e3, median(wall_ratio),
                    median(cpu_ratio));
    }
}

// ---- output equality (--check) ----

bool same_push(const api::detail::ParsedPush& a, const api::detail::ParsedPush& b) {
    if (a.push.items.size() != b.push.items.size() ||
        a.has_client_transaction_id != b.has_client_transaction_id) {
        return false;
    }
    for (std::size_t i = 0; i < a.push.items.size(); ++i) {
        const queues::PushItem& x = a.push.items[i];
        const queues::PushItem& y = b.push.items[i];
        // Generated transaction ids differ by construction: compared only when the client sent
        // them.
        if (x.queue != y.queue || x.partition != y.partition || x.trace_id != y.trace_id ||
            x.payload != y.payload ||
            (a.has_client_transaction_id[i] && x.transaction_id.view() != y.transaction_id)) {
            return false;
        }
    }
    return true;
}

bool same_ack_item(const queues::AckItem& x, const queues::AckItem& y) {
    return x.partition == y.partition && x.transaction_id.view() == y.transaction_id &&
           x.status == y.status && x.has_error == y.has_error && x.error == y.error &&
           x.lease == y.lease && x.group == y.group;
}

bool same_ack(const queues::Ack& a, const queues::Ack& b) {
    return a.items.size() == b.items.size() &&
           std::equal(a.items.begin(), a.items.end(), b.items.begin(), same_ack_item);
}

bool same_transaction(const engine::Transaction& a, const engine::Transaction& b) {
    if (a.ops.size() != b.ops.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
        const engine::TransactionOp& x = a.ops[i];
        const engine::TransactionOp& y = b.ops[i];
        if (x.kind != y.kind) {
            return false;
        }
        if (x.kind == engine::TransactionOp::Kind::ack) {
            if (!same_ack_item(x.ack, y.ack)) {
                return false;
            }
        } else if (x.push.queue != y.push.queue || x.push.partition != y.push.partition ||
                   x.push.payload != y.push.payload ||
                   x.push.transaction_id.view() != y.push.transaction_id) {
            return false;
        }
    }
    return true;
}

bool same_pop(const client::PopResult& a, const client::PopResult& b) {
    if (a.queue != b.queue || a.partition != b.partition || a.partition_id != b.partition_id ||
        a.lease_id != b.lease_id || a.consumer_group != b.consumer_group ||
        a.lease_expires_at != b.lease_expires_at || a.partitions_claimed != b.partitions_claimed ||
        a.messages.size() != b.messages.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.messages.size(); ++i) {
        const client::Message& x = a.messages[i];
        const client::Message& y = b.messages[i];
        if (x.id != y.id || x.transaction_id != y.transaction_id || x.trace_id != y.trace_id ||
            x.data_json != y.data_json || x.producer_sub != y.producer_sub ||
            x.created_at != y.created_at || x.partition_id != y.partition_id ||
            x.partition != y.partition || x.lease_id != y.lease_id ||
            x.consumer_group != y.consumer_group || x.queue != y.queue ||
            x.retry_count != y.retry_count) {
            return false;
        }
    }
    return true;
}

/// Every simdjson reader gives what today's reader gives on every body.
int check_outputs(const std::vector<Body>& bodies, Readers& r) {
    int failures = 0;
    const Check checks[] = {Check::skip, Check::walk, Check::scan};
    for (const Body& body : bodies) {
        for (const Check check : checks) {
            bool same = false;
            switch (body.kind) {
                case BodyKind::push: {
                    auto want = api::detail::parse_push(body.text, r.options, r.random, 0);
                    auto got = r.simd.push(body.text, r.options, r.random, 0, check);
                    same = want && got && same_push(*want, *got);
                    break;
                }
                case BodyKind::ack_batch: {
                    auto want = api::detail::parse_ack_batch(body.text, r.options);
                    auto got = r.simd.ack(body.text, true, r.options, check);
                    same = want && got && same_ack(*want, *got);
                    break;
                }
                case BodyKind::transaction: {
                    auto want = api::detail::parse_transaction(body.text, r.options, r.random, 0);
                    auto got = r.simd.transaction(body.text, r.options, r.random, 0, check);
                    same = want && got && same_transaction(*want, *got);
                    break;
                }
                case BodyKind::pop_answer: {
                    client::PopResult want;
                    client::PopResult got;
                    r.response.status = 200;
                    r.response.body = body.text;
                    same = client::read_pop_answer(r.http, r.response, r.pop_request, want) &&
                           r.simd.pop_answer(body.text, r.pop_request, got, check) &&
                           same_pop(want, got);
                    break;
                }
            }
            std::printf("  same output  %-16s sj-%-5s %s\n", body.name.c_str(),
                        std::string(check_name(check)).c_str(), same ? "yes" : "NO");
            failures += same ? 0 : 1;
        }
    }
    return failures;
}

// ---- what each reader accepts (--check) ----

std::string printable(std::string_view text) {
    std::string out;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte >= 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", byte);
            out += hex;
        } else {
            out.push_back(c);
        }
    }
    return out;
}

/// One mutation of `text`: a byte deleted, replaced or inserted (JSON punctuation, digits,
/// letters of the literals, escapes, control and non-ASCII bytes), or a piece repeated.
std::string mutate(const std::string& text, Rng& rng) {
    static const std::string alphabet = "{}[],:\"\\ 0123456789eE.-+tfnurlsax/b\x01\x7f\xc3\xff\xed";
    std::string out = text;
    const std::size_t at = rng.below(out.size());
    switch (rng.below(4)) {
        case 0: out.erase(at, 1); break;
        case 1: out[at] = alphabet[rng.below(alphabet.size())]; break;
        case 2:
            out.insert(out.begin() + static_cast<std::ptrdiff_t>(at),
                       alphabet[rng.below(alphabet.size())]);
            break;
        default: {
            const std::size_t length = 1 + rng.below(std::min<std::size_t>(12, out.size() - at));
            out.insert(at, out.substr(at, length));
        }
    }
    return out;
}

/// Hand-picked payloads on the edges of RFC 8259 (the cases a skipping reader lets through).
std::vector<std::string> edge_payloads() {
    return {R"({"a" 1})",
            R"({"a":1 "b":2})",
            R"([1 2])",
            R"([1,])",
            R"({"a":1,})",
            R"({"a":[1,2},"b":"c"})",
            R"("\x")",
            R"("\ud800")",
            R"("\udc00")",
            R"("\ud800\u0041")",
            R"(01)",
            R"(1.)",
            R"(-)",
            R"(1e999)",
            R"(123456789012345678901234567890)",
            R"(1e-999)",
            R"(tru)",
            R"(nulll)",
            R"([truex])",
            "\"a\x01"
            "b\"",
            "\"\xc3\x28\"",
            "\"\xed\xa0\x80\"",
            R"({1:2})",
            std::string(70, '[') + "1" + std::string(70, ']'),
            std::string(600, '[') + std::string(600, ']'),
            R"({"k":"caf\u00e9","n":-0.0e+1})",
            R"({"k" : [ 1 , { "x" : null } ] })"};
}

struct Verdicts {
    long cases = 0;
    long accepted_bad = 0;   // the reader accepted what the truth refuses: a validation gap
    long declined_good = 0;  // refused what the truth accepts
    long different = 0;      // both accepted, outputs differ
    int declined_examples = 0;
    std::vector<std::string> examples;
};

void tally(Verdicts& v, bool truth, bool accepted, bool is_same, const std::string& text) {
    ++v.cases;
    if (accepted && !truth) {
        ++v.accepted_bad;
        if (v.examples.size() < 6) {
            v.examples.push_back("accepts invalid: " + printable(text.substr(0, 160)));
        }
    } else if (!accepted && truth) {
        ++v.declined_good;
        if (v.declined_examples < 2 && v.examples.size() < 6) {
            ++v.declined_examples;
            v.examples.push_back("declines valid: " + printable(text.substr(0, 2000)));
        }
    } else if (accepted && !is_same) {
        ++v.different;
        if (v.examples.size() < 6) {
            v.examples.push_back("different output: " + printable(text.substr(0, 160)));
        }
    }
}

void report(const char* what, const std::vector<std::pair<std::string, Verdicts>>& rows) {
    std::printf("\n%s\n  %-10s %8s %14s %14s %10s\n", what, "reader", "cases", "accepts bad",
                "declines good", "differs");
    for (const auto& [name, v] : rows) {
        std::printf("  %-10s %8ld %14ld %14ld %10ld\n", name.c_str(), v.cases, v.accepted_bad,
                    v.declined_good, v.different);
    }
    for (const auto& [name, v] : rows) {
        for (const std::string& example : v.examples) {
            std::printf("    %s: %s\n", name.c_str(), example.c_str());
        }
    }
}

/// The nlohmann DOM reference is the truth: which bodies does each reader accept?
void check_acceptance(Readers& r, int cases) {
    Rng rng(2024);
    const Check checks[] = {Check::skip, Check::walk, Check::scan};
    std::vector<std::pair<std::string, Verdicts>> push_rows = {
        {"fast", {}}, {"sj-skip", {}}, {"sj-walk", {}}, {"sj-scan", {}}};
    std::vector<std::string> push_bodies;
    std::printf(
        "\nedge payloads in a push-1 body: accepted (+) or not (.) by\n"
        "  nlohmann fast sj-skip sj-walk sj-scan  payload\n");
    for (const std::string& payload : edge_payloads()) {
        push_bodies.push_back(push_one(payload));
        const std::string text = padded(push_bodies.back());
        const bool truth = api::reference::parse_push(text, r.options, r.random, 0).has_value();
        const bool fast = api::detail::parse_push(text, r.options, r.random, 0).has_value();
        std::printf("  %8s %4s", truth ? "+" : ".", fast ? "+" : ".");
        for (const Check check : checks) {
            std::printf(" %7s", r.simd.push(text, r.options, r.random, 0, check) ? "+" : ".");
        }
        std::printf("  %s\n", printable(payload.substr(0, 60)).c_str());
    }
    const std::string base_compact = push_one(order_payload(3, false));
    const std::string base_spaced = push_one(order_payload(3, true));
    for (int i = 0; i < cases; ++i) {
        std::string text = mutate(i % 2 == 0 ? base_compact : base_spaced, rng);
        if (rng.chance(0.3)) {
            text = mutate(text, rng);
        }
        push_bodies.push_back(std::move(text));
    }
    for (const std::string& raw : push_bodies) {
        const std::string text = padded(raw);
        auto slow = api::reference::parse_push(text, r.options, r.random, 0);
        const bool truth = slow.has_value();
        auto fast = api::detail::parse_push(text, r.options, r.random, 0);
        tally(push_rows[0].second, truth, fast.has_value(),
              fast && slow && fast->push.items.size() == slow->push.items.size(), raw);
        for (std::size_t c = 0; c < 3; ++c) {
            auto got = r.simd.push(text, r.options, r.random, 0, checks[c]);
            // Outputs compared with the core reader's where it read the body too (payload text
            // is kept as written there, the DOM reference re-serializes numbers).
            const bool is_same = !fast || !got || same_push(*fast, *got);
            tally(push_rows[c + 1].second, truth, got.has_value(), is_same, raw);
        }
    }
    report("push-1 bodies (edge payloads + mutated bodies), truth = nlohmann DOM reference",
           push_rows);

    std::vector<std::pair<std::string, Verdicts>> ack_rows = {
        {"fast", {}}, {"sj-skip", {}}, {"sj-walk", {}}, {"sj-scan", {}}};
    const std::string ack_base = ack_two();
    for (int i = 0; i < cases / 2; ++i) {
        const std::string raw = mutate(ack_base, rng);
        const std::string text = padded(raw);
        const bool truth = api::reference::parse_ack_batch(text, r.options).has_value();
        auto fast = api::detail::parse_ack_batch(text, r.options);
        tally(ack_rows[0].second, truth, fast.has_value(), true, raw);
        for (std::size_t c = 0; c < 3; ++c) {
            auto got = r.simd.ack(text, true, r.options, checks[c]);
            const bool is_same = !fast || !got || same_ack(*fast, *got);
            tally(ack_rows[c + 1].second, truth, got.has_value(), is_same, raw);
        }
    }
    report("ack-2 bodies (mutated), truth = nlohmann DOM reference", ack_rows);

    // Pop answers: the client's reader is the reference (it has no DOM twin); an answer that
    // is not JSON must be refused by every reader.
    std::vector<std::pair<std::string, Verdicts>> pop_rows = {
        {"fast", {}}, {"sj-skip", {}}, {"sj-walk", {}}, {"sj-scan", {}}};
    const std::string pop_base = pop_three();
    for (int i = 0; i < cases / 2; ++i) {
        const std::string raw = mutate(pop_base, rng);
        const std::string text = padded(raw);
        const bool is_json = nlohmann::json::accept(raw);
        client::PopResult want;
        r.response.status = 200;
        r.response.body = text;
        const bool read =
            client::read_pop_answer(r.http, r.response, r.pop_request, want).has_value();
        tally(pop_rows[0].second, is_json, read, true, raw);
        for (std::size_t c = 0; c < 3; ++c) {
            client::PopResult got;
            const bool is_read = r.simd.pop_answer(text, r.pop_request, got, checks[c]);
            tally(pop_rows[c + 1].second, is_json && read, is_read, !read || same_pop(want, got),
                  raw);
        }
    }
    report(
        "pop answers of 3 messages (mutated); fast: truth = valid JSON; sj-*: truth = what "
        "the client's reader reads",
        pop_rows);
}

/// What each reader can say about a bad body.
void show_errors(Readers& r) {
    const std::string good = R"({"queue":"orders","payload":{"a":1}})";
    const std::vector<std::string> bodies = {
        "",
        R"({"items": 5})",
        R"({"items":[{"queue":1}]})",
        R"({"items":[{"queue":"q","payload":{"a" 1}}]})",
        R"({"items":[{"queue":"q","payload":{"a":1,}}]})",
        R"({"items":[{"queue":"q","payload":"\x"}]})",
        "{\"items\":[{\"queue\":\"q\",\"payload\":\"\xff\"}]}",
        R"({"items":[{"queue":"q","payload":[1,2})",
        R"({"items":[)" + good + "]} trailing",
    };
    std::printf("\nerror reporting (push bodies)\n");
    for (const std::string& raw : bodies) {
        const std::string text = padded(raw);
        const auto error_of = [](const auto& parsed) {
            return parsed ? std::string("(accepted)") : parsed.error().context;
        };
        std::printf("  body: %s\n    fast: %s\n    nlohmann: %s\n", printable(raw).c_str(),
                    error_of(api::detail::parse_push(text, r.options, r.random, 0)).c_str(),
                    error_of(api::reference::parse_push(text, r.options, r.random, 0)).c_str());
        for (const Check check : {Check::skip, Check::walk}) {
            if (r.simd.push(text, r.options, r.random, 0, check)) {
                std::printf("    sj-%s: (accepted)\n", std::string(check_name(check)).c_str());
            } else {
                std::printf("    sj-%s: %s at offset %lld\n",
                            std::string(check_name(check)).c_str(),
                            r.simd.last_error().what.c_str(),
                            static_cast<long long>(r.simd.last_error().offset));
            }
        }
    }
}

/// The loop callgrind collects (--toggle-collect='*json_eval_measured_loop*').
[[gnu::noinline]] int json_eval_measured_loop(Variant* variant, int iterations) {
    int read = 0;
    for (int i = 0; i < iterations; ++i) {
        read += variant->run() ? 1 : 0;
    }
    return read;
}

int usage() {
    std::fprintf(stderr,
                 "usage: json_read_bench [--runs N] [--ms M] [--body NAME] [--readers A,B]\n"
                 "                       [--impl KERNEL]\n"
                 "       json_read_bench --check [--cases N]\n"
                 "       json_read_bench --errors\n"
                 "       json_read_bench --list\n"
                 "       json_read_bench --callgrind BODY READER ITERATIONS\n");
    return 2;
}

int run(int argc, char** argv) {
    Options options;
    std::string mode = "measure";
    std::string callgrind_body, callgrind_reader;
    int callgrind_iterations = 0;
    int cases = 20'000;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--runs" && has_value) {
            options.runs = std::atoi(argv[++i]);
        } else if (arg == "--ms" && has_value) {
            options.run_ms = std::atof(argv[++i]);
        } else if (arg == "--body" && has_value) {
            options.body_filter = argv[++i];
        } else if (arg == "--readers" && has_value) {
            options.readers = argv[++i];
        } else if (arg == "--impl" && has_value) {
            options.impl = argv[++i];
        } else if (arg == "--cases" && has_value) {
            cases = std::atoi(argv[++i]);
        } else if (arg == "--check" || arg == "--errors" || arg == "--list" || arg == "--stdin") {
            mode = arg.substr(2);
        } else if (arg == "--callgrind" && i + 3 < argc) {
            mode = "callgrind";
            callgrind_body = argv[++i];
            callgrind_reader = argv[++i];
            callgrind_iterations = std::atoi(argv[++i]);
        } else {
            return usage();
        }
    }
    if (!options.impl.empty() && !SimdReaders::force_implementation(options.impl)) {
        std::fprintf(stderr, "simdjson kernel %s does not run here\n", options.impl.c_str());
        return 2;
    }
    const std::vector<Body> bodies = make_bodies();
    Readers readers;
    if (mode == "list") {
        for (const Body& body : bodies) {
            std::printf("%s (%zu bytes): %s\n\n", body.name.c_str(), body.text.size(),
                        body.text.substr(0, 700).c_str());
        }
        return 0;
    }
    if (mode == "check") {
        const int failures = check_outputs(bodies, readers);
        check_acceptance(readers, cases);
        return failures == 0 ? 0 : 1;
    }
    if (mode == "errors") {
        show_errors(readers);
        return 0;
    }
    if (mode == "stdin") {
        // One push body from stdin through every reader (for looking at a single case).
        std::string raw;
        char buffer[4096];
        for (std::size_t n = 0; (n = std::fread(buffer, 1, sizeof buffer, stdin)) > 0;) {
            raw.append(buffer, n);
        }
        const std::string text = padded(raw);
        const auto error_of = [](const auto& parsed) {
            return parsed ? std::string("accepted") : parsed.error().context;
        };
        std::printf(
            "nlohmann: %s\n",
            error_of(api::reference::parse_push(text, readers.options, readers.random, 0)).c_str());
        std::printf(
            "fast: %s\n",
            error_of(api::detail::parse_push(text, readers.options, readers.random, 0)).c_str());
        for (const Check check : {Check::skip, Check::walk, Check::scan}) {
            const bool read =
                readers.simd.push(text, readers.options, readers.random, 0, check).has_value();
            std::printf("sj-%s: %s\n", std::string(check_name(check)).c_str(),
                        read ? "accepted" : readers.simd.last_error().what.c_str());
        }
        return 0;
    }
    if (mode == "callgrind") {
        for (const Body& body : bodies) {
            if (body.name != callgrind_body) {
                continue;
            }
            std::vector<Variant> variants = variants_of(body, readers);
            for (Variant& v : variants) {
                if (v.name == callgrind_reader) {
                    v.run();  // warm-up: first allocations, parser capacity
                    const int read = json_eval_measured_loop(&v, callgrind_iterations);
                    std::printf("%s %s %zu bytes read %d/%d (stage 1: %s)\n", body.name.c_str(),
                                v.name.c_str(), body.text.size(), read, callgrind_iterations,
                                SimdReaders::active_implementation().c_str());
                    return read == callgrind_iterations ? 0 : 1;
                }
            }
        }
        return usage();
    }
    std::printf("simdjson stage 1 kernel: %s, on-demand code compiled for: %s\n",
                SimdReaders::active_implementation().c_str(),
                SimdReaders::builtin_implementation().c_str());
    for (const Body& body : bodies) {
        if (!options.body_filter.empty() && body.name != options.body_filter) {
            continue;
        }
        std::vector<Variant> variants = variants_of(body, readers);
        if (!options.readers.empty()) {
            const std::string wanted = "," + options.readers + ",";
            std::erase_if(variants, [&](const Variant& v) {
                return wanted.find("," + v.name + ",") == std::string::npos;
            });
        }
        if (!variants.empty()) {
            measure(body, variants, options);
        }
    }
    return 0;
}

}  // namespace
}  // namespace queen::json_eval

int main(int argc, char** argv) {
    return queen::json_eval::run(argc, argv);
}
