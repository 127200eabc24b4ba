// examples/last_value.cpp — KV as a last-value cache. `--role producer` replays a price feed
// (ticks with a sequence number, drawn from --seed) into one key per symbol with compare-and-set,
// so two redundant producers replaying the same feed never put an older tick over a newer one:
// a write names the version it last saw, and on a conflict the producer reads what is stored and
// writes only if its tick is newer. `--role reader` lists the keys with a prefix, page by page.
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <string>

#include "common.hpp"
#include "queen/client/client.hpp"

namespace {
constexpr const char* usage =
    "usage: example_last_value --role producer|reader [--url http://127.0.0.1:6632]\n"
    "                          [--bucket prices] [--prefix SYM]\n"
    "       producer: [--symbols 20] [--ticks 200] [--seed 1]      reader: [--page 7]\n";

/// One symbol's latest tick in the feed.
struct Tick {
    std::int64_t sequence = 0;
    std::int64_t cents = 10'000;
};

/// What a producer knows of a stored key: its version and the sequence of the tick it holds.
struct Seen {
    std::uint64_t version = 0;  // 0: absent, so the first write is "create only"
    std::int64_t sequence = 0;
};

int produce(queen::client::Client& client, const std::string& bucket, const std::string& prefix,
            long symbols, long ticks, long seed) {
    std::mt19937_64 random(static_cast<std::uint64_t>(seed));
    std::map<std::string, Tick> feed;  // each symbol's latest tick: a random price walk
    std::map<std::string, Seen> seen;
    long written = 0, skipped = 0, conflicts = 0;
    for (long sequence = 1; sequence <= ticks; ++sequence) {
        const auto index = random() % static_cast<std::uint64_t>(symbols);
        const std::string symbol = prefix + (index < 10 ? "0" : "") + std::to_string(index);
        Tick& tick = feed[symbol];
        tick.sequence = sequence;
        tick.cents += static_cast<std::int64_t>(random() % 201) - 100;
        Seen& known = seen[symbol];
        while (known.sequence < sequence) {  // else the store holds this tick or a newer one
            queen::client::KvSet set;
            set.bucket = bucket;
            set.key = symbol;
            set.value_json = "{\"symbol\":\"" + symbol + "\",\"seq\":" + std::to_string(sequence) +
                             ",\"cents\":" + std::to_string(tick.cents) + "}";
            set.expected_version = known.version;
            auto version = client.kv_put(set);
            if (version) {
                known = {*version, sequence};
                ++written;
                break;
            }
            if (!version.error().is(queen::client::Errc::conflict)) {
                std::fprintf(stderr, "%s\n", version.error().message().c_str());
                return 1;
            }
            // Someone wrote it since we last looked: read what is stored, decide again.
            ++conflicts;
            auto stored = client.kv_get(bucket, symbol);
            if (!stored && queen::client::http_status_of(stored.error()) != 404) {
                std::fprintf(stderr, "%s\n", stored.error().message().c_str());
                return 1;
            }
            known = stored
                        ? Seen{stored->version, examples::json_integer(stored->value_json, "seq")}
                        : Seen{};
        }
        skipped += known.sequence > sequence ? 1 : 0;
    }
    for (const auto& [symbol, tick] : feed) {
        std::printf("last %s seq=%lld cents=%lld\n", symbol.c_str(),
                    static_cast<long long>(tick.sequence), static_cast<long long>(tick.cents));
    }
    std::printf("%ld ticks for %zu symbols: %ld written, %ld skipped as older, %ld conflicts\n",
                ticks, feed.size(), written, skipped, conflicts);
    return 0;
}

int read_all(queen::client::Client& client, const std::string& bucket, const std::string& prefix,
             long page_size) {
    queen::client::KvListQuery query;
    query.bucket = bucket;
    query.prefix = prefix;
    query.limit = page_size;
    long keys = 0;
    long pages = 0;
    do {
        auto page = client.kv_list(query);
        if (!page) {
            std::fprintf(stderr, "%s\n", page.error().message().c_str());
            return 1;
        }
        ++pages;
        for (const auto& entry : page->entries) {
            ++keys;
            std::printf("page %ld: %s %s version %llu\n", pages, entry.key.c_str(),
                        entry.value_json.c_str(), static_cast<unsigned long long>(entry.version));
        }
        query.after = page->next_after;  // empty: that was the last page
    } while (!query.after.empty());
    std::printf("listed %ld keys with prefix %s in %ld pages\n", keys, prefix.c_str(), pages);
    return 0;
}
}  // namespace

int main(int argc, char** argv) {
    const auto flags = examples::parse_flags(argc, argv, usage);
    const queen::client::ClientOptions options = examples::client_options(flags);
    const std::string role = examples::flag(flags, "role", "");
    const std::string bucket = examples::flag(flags, "bucket", "prices");
    const std::string prefix = examples::flag(flags, "prefix", "SYM");
    const long symbols = examples::number_flag(flags, "symbols", 20);
    const long ticks = examples::number_flag(flags, "ticks", 200);
    const long seed = examples::number_flag(flags, "seed", 1);
    const long page = examples::number_flag(flags, "page", 7);
    if ((role != "producer" && role != "reader") || symbols < 1 || symbols > 100 || page < 1) {
        std::fprintf(stderr, "--role producer|reader, --symbols 1..100, --page >= 1\n%s", usage);
        return 2;
    }
    queen::client::Client client{options};
    return role == "producer" ? produce(client, bucket, prefix, symbols, ticks, seed)
                              : read_all(client, bucket, prefix, page);
}
