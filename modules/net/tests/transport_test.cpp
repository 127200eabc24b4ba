// modules/net/tests/transport_test.cpp — real loopback sockets: two transports of one cluster
// exchange frames both ways over one connection, in order and batched; another secret or
// cluster is refused with the reason on both sides; a restarted peer is redialed; an oversized
// frame closes the connection.
#include "queen/net/transport.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "queen/net/frame.hpp"
#include "queen/testing/catch.hpp"

using namespace queen;
using namespace queen::net;

namespace {

constexpr char cluster[] = "40542480060e5e7ff2ed333ec6a9446a";
constexpr char secret[] = "correct horse battery staple";
constexpr std::uint8_t raft_type = frame_type_application;

/// What one transport saw, awaitable from the test thread.
class Inbox {
public:
    Transport::OnMessage on_message() {
        return [this](NodeId from, std::uint8_t type, ByteSpan payload) {
            std::lock_guard lock(mutex_);
            messages_.push_back({from, type, std::string(payload.begin(), payload.end())});
            changed_.notify_all();
        };
    }
    Transport::OnEvent on_event() {
        return [this](const PeerEvent& event) {
            std::lock_guard lock(mutex_);
            events_.push_back(event);
            changed_.notify_all();
        };
    }
    /// Waits (at most 20 s) until `done()` holds under the lock.
    template <class Done>
    bool wait(Done done) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, std::chrono::seconds(20), [&] { return done(); });
    }
    std::size_t message_count() {
        std::lock_guard lock(mutex_);
        return messages_.size();
    }
    bool wait_messages(std::size_t count) {
        return wait([&] { return messages_.size() >= count; });
    }
    bool wait_event(PeerEvent::Kind kind, std::size_t count = 1) {
        return wait([&] {
            return static_cast<std::size_t>(
                       std::count_if(events_.begin(), events_.end(),
                                     [&](const PeerEvent& e) { return e.kind == kind; })) >= count;
        });
    }
    std::vector<std::string> payloads_from(NodeId from) {
        std::lock_guard lock(mutex_);
        std::vector<std::string> out;
        for (const auto& m : messages_) {
            if (m.from == from && m.type == raft_type) {
                out.push_back(m.payload);
            }
        }
        return out;
    }
    std::string refusal() {
        std::lock_guard lock(mutex_);
        for (const auto& e : events_) {
            if (e.kind == PeerEvent::Kind::refused) {
                return e.reason;
            }
        }
        return {};
    }

private:
    struct Message {
        NodeId from;
        std::uint8_t type;
        std::string payload;
    };
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<Message> messages_;
    std::vector<PeerEvent> events_;
};

std::unique_ptr<Transport> start(std::uint64_t node, Inbox& inbox, std::uint16_t port = 0,
                                 std::string key = secret, std::string cluster_id = cluster,
                                 TransportOptions options = {}) {
    auto identity = PeerIdentity::make(std::move(cluster_id), NodeId{node}, std::move(key));
    REQUIRE(identity.has_value());
    options.port = port;
    auto transport = Transport::start(*identity, options, inbox.on_message(), inbox.on_event(),
                                      NullLogger::instance());
    REQUIRE(transport.has_value());
    return std::move(*transport);
}

std::string payload_for(int i) {
    return "message " + std::to_string(i) + std::string(static_cast<std::size_t>(i % 97), '.');
}

}  // namespace

TEST_CASE("net: two nodes exchange frames both ways over one connection, in order",
          "[net][transport]") {
    Inbox inbox1;
    Inbox inbox2;
    auto node1 = start(1, inbox1);
    auto node2 = start(2, inbox2);
    node1->add_peer(NodeId{2}, "127.0.0.1", node2->port());
    node2->add_peer(NodeId{1}, "127.0.0.1", node1->port());
    // Frames sent before the connection exists wait for it.
    constexpr int count = 5000;
    for (int i = 0; i < count; ++i) {
        REQUIRE(node1->send(NodeId{2}, raft_type, as_bytes(payload_for(i))));
        REQUIRE(node2->send(NodeId{1}, raft_type, as_bytes(payload_for(count - i))));
    }
    REQUIRE(inbox2.wait_messages(count));
    REQUIRE(inbox1.wait_messages(count));
    const auto at2 = inbox2.payloads_from(NodeId{1});
    const auto at1 = inbox1.payloads_from(NodeId{2});
    REQUIRE(at2.size() == count);
    REQUIRE(at1.size() == count);
    for (int i = 0; i < count; ++i) {
        CHECK(at2[static_cast<std::size_t>(i)] == payload_for(i));
        CHECK(at1[static_cast<std::size_t>(i)] == payload_for(count - i));
    }
    const TransportStats s1 = node1->stats();
    const TransportStats s2 = node2->stats();
    CHECK(s1.connections_open == 1);
    CHECK(s2.connections_open == 1);
    CHECK(s1.handshakes_ok_total == 1);  // one connection for the pair: node 1 dialed it
    CHECK(s2.handshakes_ok_total == 1);
    CHECK(s1.frames_sent_total == count);
    CHECK(s2.frames_received_total == count);
    CHECK(s1.writes_total < s1.frames_sent_total);  // queued frames leave together
    CHECK(s1.frames_dropped_total == 0);
}

TEST_CASE("net: a node with another secret or of another cluster is refused, saying why",
          "[net][transport]") {
    Inbox inbox1;
    Inbox inbox2;
    auto node2 = start(2, inbox2);
    std::unique_ptr<Transport> node1;
    std::string expected;
    SECTION("another secret") {
        node1 = start(1, inbox1, 0, "a different secret of many bytes");
        expected = "does not hold this cluster's secret";
    }
    SECTION("another cluster") {
        node1 = start(1, inbox1, 0, secret, "0123456789abcdef0123456789abcdef");
        expected = "belongs to cluster 0123456789abcdef0123456789abcdef";
    }
    node1->add_peer(NodeId{2}, "127.0.0.1", node2->port());
    REQUIRE(inbox1.wait_event(PeerEvent::Kind::refused));
    REQUIRE(inbox2.wait_event(PeerEvent::Kind::refused));
    CHECK_THAT(inbox1.refusal(), Catch::Contains(expected));
    CHECK_THAT(inbox2.refusal(), Catch::Contains(expected));
    CHECK(node1->send(NodeId{2}, raft_type, as_bytes(std::string("never delivered"))));
    CHECK(node1->stats().connections_open == 0);
    CHECK(node2->stats().connections_open == 0);
    CHECK(inbox2.message_count() == 0);
}

TEST_CASE("net: the dialer redials a restarted peer and the queued frames follow",
          "[net][transport]") {
    Inbox inbox1;
    Inbox inbox2;
    auto node1 = start(1, inbox1);
    auto node2 = start(2, inbox2);
    const std::uint16_t port2 = node2->port();
    node1->add_peer(NodeId{2}, "127.0.0.1", port2);
    REQUIRE(node1->send(NodeId{2}, raft_type, as_bytes(std::string("before"))));
    REQUIRE(inbox2.wait_messages(1));
    node2->stop();
    REQUIRE(inbox1.wait_event(PeerEvent::Kind::disconnected));
    REQUIRE(node1->send(NodeId{2}, raft_type, as_bytes(std::string("while down"))));
    Inbox inbox2b;
    auto node2b = start(2, inbox2b, port2);  // the same node, back on its port
    REQUIRE(inbox2b.wait_messages(1));
    CHECK(inbox2b.payloads_from(NodeId{1}) == std::vector<std::string>{"while down"});
    REQUIRE(inbox1.wait_event(PeerEvent::Kind::connected, 2));
    CHECK(node1->stats().connections_open == 1);
}

TEST_CASE("net: a frame over the receiver's limit closes the connection", "[net][transport]") {
    Inbox inbox1;
    Inbox inbox2;
    TransportOptions small;
    small.frame_body_bytes_max = 1024;
    small.queue_bytes_max = 1 << 20;
    auto node2 = start(2, inbox2, 0, secret, cluster, small);
    auto node1 = start(1, inbox1);
    node1->add_peer(NodeId{2}, "127.0.0.1", node2->port());
    REQUIRE(node1->send(NodeId{2}, raft_type, as_bytes(std::string(100, 'a'))));
    REQUIRE(inbox2.wait_messages(1));
    REQUIRE(node1->send(NodeId{2}, raft_type, as_bytes(std::string(4096, 'b'))));
    REQUIRE(inbox2.wait_event(PeerEvent::Kind::disconnected));
    CHECK(inbox2.message_count() == 1);
}

TEST_CASE("net: frames for an unknown peer or beyond the queue limit are dropped and counted",
          "[net][transport]") {
    Inbox inbox1;
    TransportOptions options;
    options.frame_body_bytes_max = 1024;
    options.queue_bytes_max = 4096;
    auto node1 = start(1, inbox1, 0, secret, cluster, options);
    CHECK_FALSE(node1->send(NodeId{9}, raft_type, as_bytes(std::string("nobody"))));
    node1->add_peer(NodeId{3}, "127.0.0.1", 1);  // nothing listens there: frames wait
    int queued = 0;
    while (node1->send(NodeId{3}, raft_type, as_bytes(std::string(500, 'q')))) {
        ++queued;
    }
    CHECK(queued == 4096 / (500 + 9));
    CHECK(node1->stats().frames_dropped_total == 2);
}
