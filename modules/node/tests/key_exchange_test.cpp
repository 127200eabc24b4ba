// modules/node/tests/key_exchange_test.cpp — the payload key hand-off between cluster nodes: key
// frames sealed under the cluster secret (tampering, another secret, other ids refused), and the
// protocol over real peer transports on loopback (one key created once, none while a peer is
// unreachable, a peer's key handed over, different keys reported).
#include "key_exchange.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "encryption_key.hpp"
#include "peer_support.hpp"
#include "queen/core/hex.hpp"
#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"
#include "seeded_random.hpp"

namespace {
namespace fs = std::filesystem;
using queen::Byte;
using queen::Bytes;
using queen::Errc;
using queen::NodeId;
using namespace queen::node::detail;

const std::string key_a = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const std::string key_b = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";
const std::string secret = "a cluster secret of at least 16 bytes";

using queen::api::testing::SeededRandom;

std::string fingerprint(const std::string& key_hex) {
    return queen::api::encryption_key_fingerprint(key_hex).value();
}

KeyFrame response_with(const std::string& key_hex) {
    KeyFrame frame;
    frame.state = KeyState::key;
    frame.session.fill(7);
    frame.fingerprint = fingerprint(key_hex);
    frame.key_hex = key_hex;
    return frame;
}

/// Remembers every line; waits for one.
class CaptureLogger final : public queen::Logger {
public:
    void write(queen::Level, std::string_view event, std::string_view fields, const char*,
               int) override {
        {
            std::lock_guard lock(mutex_);
            lines_.push_back(std::string(event) + " " + std::string(fields));
        }
        changed_.notify_all();
    }
    /// Whether a line of `event` containing every one of `parts` was written.
    bool has(const std::string& event, const std::vector<std::string>& parts = {}) {
        std::lock_guard lock(mutex_);
        return find(event, parts);
    }
    bool wait_for(const std::string& event, const std::vector<std::string>& parts = {}) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, std::chrono::seconds(20),
                                 [&] { return find(event, parts); });
    }
    std::string text() {
        std::lock_guard lock(mutex_);
        std::string all;
        for (const auto& line : lines_) {
            all += line + "\n";
        }
        return all;
    }

private:
    bool find(const std::string& event, const std::vector<std::string>& parts) const {
        for (const auto& line : lines_) {
            if (line.rfind(event + " ", 0) != 0) {
                continue;
            }
            bool all = true;
            for (const auto& part : parts) {
                all = all && line.find(part) != std::string::npos;
            }
            if (all) {
                return true;
            }
        }
        return false;
    }
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<std::string> lines_;
};

using queen::node::testing::free_port;

/// Peer transports of a `size`-node cluster on 127.0.0.1; node i starts when start(i) is called.
struct Nodes {
    explicit Nodes(std::size_t size) {
        std::vector<std::string> peers;
        for (std::size_t i = 1; i <= size; ++i) {
            peers.push_back(std::to_string(i) + "@127.0.0.1:" + std::to_string(free_port()));
        }
        for (std::size_t i = 1; i <= size; ++i) {
            queen::node::NodeConfig config;
            config.node.id = i;
            config.cluster.peers = peers;
            config.cluster.secret = secret;
            configs.push_back(config);
            loggers.push_back(std::make_unique<CaptureLogger>());
        }
        clusters.resize(size);
        exchanges.resize(size);
    }

    KeyExchange& start(std::size_t id, bool is_enabled = true) {
        auto cluster = Cluster::start(configs[id - 1], queen::SystemClock::instance(), logger(id));
        REQUIRE(cluster.has_value());
        clusters[id - 1] = std::move(cluster).value();
        KeyExchange::Options options;
        options.request_interval_ms = 20;
        options.resend_after_ms = 100;
        options.log_interval_ms = 100;
        exchanges[id - 1] =
            KeyExchange::start(*clusters[id - 1], secret, is_enabled,
                               queen::SystemClock::instance(), logger(id), random, options);
        return *exchanges[id - 1];
    }
    CaptureLogger& logger(std::size_t id) { return *loggers[id - 1]; }
    fs::path key_file(std::size_t id) const {
        return dir.path() / std::to_string(id) / "keys" / "payload.key";
    }
    /// Runs obtain() of node `id` on its own thread.
    std::future<queen::Result<KeyExchange::Obtained>> obtain(
        std::size_t id, std::function<bool()> is_cancelled = {}) {
        KeyExchange* exchange = exchanges[id - 1].get();
        const fs::path path = key_file(id);
        return std::async(std::launch::async, [exchange, path, is_cancelled] {
            return exchange->obtain(path, is_cancelled);
        });
    }
    ~Nodes() {
        for (auto& cluster : clusters) {
            if (cluster) {
                cluster->stop();
            }
        }
    }

    queen::testing::TempDir dir;
    SeededRandom random{queen::testing::seed_from_env()};
    std::vector<queen::node::NodeConfig> configs;
    std::vector<std::unique_ptr<CaptureLogger>> loggers;
    std::vector<std::unique_ptr<Cluster>> clusters;
    std::vector<std::shared_ptr<KeyExchange>> exchanges;
};

}  // namespace

TEST_CASE("node: a key frame opens only with the secret, ids and type it was sealed for",
          "[node][key_exchange]") {
    SeededRandom random(queen::testing::seed_from_env());
    const auto wrap = queen::api::SealingKey::derive(secret, key_wrap_label);
    const NodeId one{1};
    const NodeId two{2};
    auto sealed =
        seal_key_frame(frame_type_key_response, two, one, response_with(key_a), wrap, random);
    REQUIRE(sealed.has_value());
    auto opened = open_key_frame(frame_type_key_response, two, one, *sealed, wrap);
    REQUIRE(opened.has_value());
    CHECK(opened->state == KeyState::key);
    CHECK(opened->key_hex == key_a);
    CHECK(opened->fingerprint == fingerprint(key_a));
    CHECK(opened->session == response_with(key_a).session);
    // The key never crosses in clear.
    const std::string wire(sealed->begin(), sealed->end());
    Bytes key_bytes(32);
    REQUIRE(queen::decode_hex(key_a, key_bytes));
    CHECK(wire.find(std::string(key_bytes.begin(), key_bytes.end())) == std::string::npos);

    SECTION("every altered byte is refused") {
        for (std::size_t i = 0; i < sealed->size(); ++i) {
            Bytes tampered = *sealed;
            tampered[i] ^= 0x01;
            auto refused = open_key_frame(frame_type_key_response, two, one, tampered, wrap);
            INFO("byte " << i);
            REQUIRE_FALSE(refused.has_value());
            CHECK((refused.error().is(Errc::corruption) || refused.error().is(Errc::unsupported)));
        }
        Bytes shorter(sealed->begin(), sealed->end() - 1);
        CHECK_FALSE(open_key_frame(frame_type_key_response, two, one, shorter, wrap).has_value());
        CHECK_FALSE(open_key_frame(frame_type_key_response, two, one, Bytes{}, wrap).has_value());
    }
    SECTION("another cluster secret is refused") {
        const auto other =
            queen::api::SealingKey::derive("another secret of 16+ bytes", key_wrap_label);
        auto refused = open_key_frame(frame_type_key_response, two, one, *sealed, other);
        REQUIRE_FALSE(refused.has_value());
        CHECK(refused.error().is(Errc::corruption));
        CHECK_THAT(refused.error().message(), Catch::Contains("cluster.secret"));
    }
    SECTION("other ids or another frame type are refused") {
        CHECK_FALSE(open_key_frame(frame_type_key_response, one, two, *sealed, wrap).has_value());
        CHECK_FALSE(
            open_key_frame(frame_type_key_response, two, NodeId{3}, *sealed, wrap).has_value());
        CHECK_FALSE(open_key_frame(frame_type_key_request, two, one, *sealed, wrap).has_value());
    }
    SECTION("requests and answers without a key carry no key") {
        KeyFrame request;
        request.state = KeyState::key;
        request.fingerprint = fingerprint(key_b);
        request.key_hex = key_b;  // ignored: a request never carries the key
        auto bytes = seal_key_frame(frame_type_key_request, one, two, request, wrap, random);
        REQUIRE(bytes.has_value());
        auto back = open_key_frame(frame_type_key_request, one, two, *bytes, wrap);
        REQUIRE(back.has_value());
        CHECK(back->state == KeyState::key);
        CHECK(back->fingerprint == fingerprint(key_b));
        CHECK(back->key_hex.empty());
        KeyFrame none;
        bytes = seal_key_frame(frame_type_key_response, one, two, none, wrap, random);
        REQUIRE(bytes.has_value());
        back = open_key_frame(frame_type_key_response, one, two, *bytes, wrap);
        REQUIRE(back.has_value());
        CHECK(back->state == KeyState::none);
        CHECK(back->key_hex.empty());
    }
    SECTION("a frame of another version is unsupported") {
        Bytes other_version = *sealed;
        other_version[0] = 2;
        CHECK(open_key_frame(frame_type_key_response, two, one, other_version, wrap)
                  .error()
                  .is(Errc::unsupported));
    }
    SECTION("a response of state key must carry a key and its fingerprint") {
        KeyFrame frame = response_with(key_a);
        frame.key_hex.clear();
        CHECK_FALSE(
            seal_key_frame(frame_type_key_response, two, one, frame, wrap, random).has_value());
        frame = response_with(key_a);
        frame.fingerprint = "xyz";
        CHECK_FALSE(
            seal_key_frame(frame_type_key_response, two, one, frame, wrap, random).has_value());
    }
}

TEST_CASE("node: a fresh cluster creates one key at its smallest node, the others receive it",
          "[node][key_exchange]") {
    Nodes nodes(3);
    for (std::size_t i = 1; i <= 3; ++i) {
        nodes.start(i);
    }
    auto one = nodes.obtain(1);
    auto two = nodes.obtain(2);
    auto three = nodes.obtain(3);
    auto key_one = one.get();
    auto key_two = two.get();
    auto key_three = three.get();
    REQUIRE(key_one.has_value());
    REQUIRE(key_two.has_value());
    REQUIRE(key_three.has_value());
    CHECK(key_one->from == NodeId{0});
    CHECK(key_two->from != NodeId{0});
    CHECK(key_three->from != NodeId{0});
    CHECK(key_two->key_hex == key_one->key_hex);
    CHECK(key_three->key_hex == key_one->key_hex);
    for (std::size_t i = 1; i <= 3; ++i) {
        CHECK(read_key_file(nodes.key_file(i)).value() == key_one->key_hex);
    }
    CHECK(nodes.logger(1).has("cluster.key_created"));
    CHECK_FALSE(nodes.logger(2).has("cluster.key_created"));
    CHECK_FALSE(nodes.logger(3).has("cluster.key_created"));
    CHECK(nodes.logger(2).has("cluster.key_received"));
    CHECK_FALSE(nodes.logger(1).has("cluster.key_mismatch"));
}

TEST_CASE("node: no key is created while a peer has not answered, a peer's key is handed over",
          "[node][key_exchange]") {
    Nodes nodes(3);
    nodes.start(1);
    nodes.start(2);
    // Node 3 is down: node 1 has node 2's "none" but may not create the key.
    auto one = nodes.obtain(1, [&] {
        return nodes.logger(1).has("cluster.key_waiting", {"unanswered=3", "without_key=2"});
    });
    auto two = nodes.obtain(2, [&] {
        return nodes.logger(2).has("cluster.key_waiting", {"unanswered=3", "without_key=1"});
    });
    auto cancelled_one = one.get();
    auto cancelled_two = two.get();
    REQUIRE_FALSE(cancelled_one.has_value());
    CHECK(cancelled_one.error().is(Errc::cancelled));
    REQUIRE_FALSE(cancelled_two.has_value());
    CHECK(cancelled_two.error().is(Errc::cancelled));
    CHECK_FALSE(fs::exists(nodes.key_file(1)));
    CHECK_FALSE(fs::exists(nodes.key_file(2)));
    CHECK_FALSE(nodes.logger(1).has("cluster.key_created"));

    // Node 3 comes up with a key of its own (its settings): both get that one.
    nodes.start(3).serve(key_b);
    one = nodes.obtain(1);
    two = nodes.obtain(2);
    auto key_one = one.get();
    auto key_two = two.get();
    REQUIRE(key_one.has_value());
    REQUIRE(key_two.has_value());
    CHECK(key_one->key_hex == key_b);
    CHECK(key_two->key_hex == key_b);
    CHECK(read_key_file(nodes.key_file(1)).value() == key_b);
    CHECK_FALSE(nodes.logger(1).has("cluster.key_created"));
    CHECK(nodes.logger(3).has("cluster.key_sent"));
}

TEST_CASE("node: a peer with encryption off does not count, the next smallest node creates",
          "[node][key_exchange]") {
    Nodes nodes(3);
    nodes.start(1, false);
    nodes.start(2);
    nodes.start(3);
    auto two = nodes.obtain(2);
    auto three = nodes.obtain(3);
    auto key_two = two.get();
    auto key_three = three.get();
    REQUIRE(key_two.has_value());
    REQUIRE(key_three.has_value());
    CHECK(key_two->from == NodeId{0});
    CHECK(key_three->from == NodeId{2});
    CHECK(key_three->key_hex == key_two->key_hex);
    CHECK(nodes.logger(2).has("cluster.key_peer_disabled", {"peer=1"}));
}

TEST_CASE("node: nodes holding different keys log both fingerprints", "[node][key_exchange]") {
    Nodes nodes(2);
    nodes.start(1).serve(key_a);
    nodes.start(2).serve(key_b);
    const std::vector<std::string> both{"peer_fingerprint=", fingerprint(key_a),
                                        fingerprint(key_b)};
    CHECK(nodes.logger(1).wait_for("cluster.key_mismatch", both));
    CHECK(nodes.logger(2).wait_for("cluster.key_mismatch", both));
    INFO(nodes.logger(1).text());
}
