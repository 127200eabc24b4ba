// modules/net/tests/handshake_test.cpp — two nodes with the same cluster and secret authenticate
// each other; another cluster, another secret, another version, a tampered or replayed message
// is refused with an error that says which.
#include "queen/net/handshake.hpp"

#include "queen/core/rng.hpp"
#include "queen/net/errc.hpp"
#include "queen/net/frame.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

using namespace queen;
using namespace queen::net;

namespace {

constexpr char cluster[] = "40542480060e5e7ff2ed333ec6a9446a";
constexpr char secret[] = "correct horse battery staple";

Nonce nonce_from(Rng& rng) {
    Nonce nonce{};
    for (Byte& b : nonce) {
        b = static_cast<Byte>(rng.next());
    }
    return nonce;
}

PeerIdentity identity(std::uint64_t node, std::string cluster_id = cluster,
                      std::string key = secret) {
    auto made = PeerIdentity::make(std::move(cluster_id), NodeId{node}, std::move(key));
    REQUIRE(made.has_value());
    return *made;
}

/// The three messages through their frame encodings, as a connection carries them.
template <class T, class Decode>
T over_the_wire(const T& message, FrameType type, Decode decode) {
    Bytes stream;
    append_frame(stream, type, encode(message));
    FrameReader reader(1024);
    reader.append(stream);
    auto frame = reader.next();
    REQUIRE(frame.has_value());
    REQUIRE(frame->has_value());
    REQUIRE((*frame)->type == static_cast<std::uint8_t>(type));
    auto decoded = decode((*frame)->payload);
    REQUIRE(decoded.has_value());
    return *decoded;
}

}  // namespace

TEST_CASE("net: two nodes of one cluster authenticate each other", "[net][handshake]") {
    const auto seed = queen::testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    const PeerIdentity dialer = identity(1);
    const PeerIdentity acceptor = identity(2);
    const Hello hello =
        over_the_wire(dialer.hello(nonce_from(rng)), FrameType::hello, decode_hello);
    CHECK(hello == dialer.hello(hello.nonce));
    auto challenge = acceptor.challenge(hello, nonce_from(rng));
    REQUIRE(challenge.has_value());
    const Challenge received = over_the_wire(*challenge, FrameType::challenge, decode_challenge);
    CHECK(received.node == NodeId{2});
    auto proof = dialer.prove(hello, received);
    REQUIRE(proof.has_value());
    CHECK(acceptor.check(hello, received, over_the_wire(*proof, FrameType::proof, decode_proof))
              .has_value());
}

TEST_CASE("net: a peer of another cluster, secret or version is refused, saying which",
          "[net][handshake]") {
    Rng rng(7);
    const PeerIdentity acceptor = identity(2);
    SECTION("another cluster id") {
        const PeerIdentity stranger = identity(1, "0123456789abcdef0123456789abcdef");
        auto challenge = acceptor.challenge(stranger.hello(nonce_from(rng)), nonce_from(rng));
        REQUIRE_FALSE(challenge.has_value());
        CHECK(challenge.error().is(net::Errc::other_cluster));
        CHECK_THAT(challenge.error().context, Catch::Contains("0123456789abcdef0123456789abcdef"));
    }
    SECTION("another version") {
        Hello hello = identity(1).hello(nonce_from(rng));
        hello.version = 2;
        auto challenge = acceptor.challenge(hello, nonce_from(rng));
        REQUIRE_FALSE(challenge.has_value());
        CHECK(challenge.error().is(net::Errc::unsupported_version));
    }
    SECTION("the acceptor does not hold the secret: the dialer refuses it") {
        const PeerIdentity dialer = identity(1);
        const PeerIdentity impostor = identity(2, cluster, "another secret of enough bytes");
        const Hello hello = dialer.hello(nonce_from(rng));
        auto challenge = impostor.challenge(hello, nonce_from(rng));
        REQUIRE(challenge.has_value());
        auto proof = dialer.prove(hello, *challenge);
        REQUIRE_FALSE(proof.has_value());
        CHECK(proof.error().is(net::Errc::unauthenticated));
    }
    SECTION("the dialer does not hold the secret: the acceptor refuses it") {
        const std::string wrong = "another secret of enough bytes";
        const PeerIdentity impostor = identity(1, cluster, wrong);
        const Hello hello = impostor.hello(nonce_from(rng));
        auto challenge = acceptor.challenge(hello, nonce_from(rng));
        REQUIRE(challenge.has_value());
        // The best proof the impostor can make: over the same transcript, with its own secret.
        auto as_it_believes = identity(2, cluster, wrong).challenge(hello, challenge->nonce);
        REQUIRE(as_it_believes.has_value());
        auto proof = impostor.prove(hello, *as_it_believes);
        REQUIRE(proof.has_value());
        auto checked = acceptor.check(hello, *challenge, *proof);
        REQUIRE_FALSE(checked.has_value());
        CHECK(checked.error().is(net::Errc::unauthenticated));
        CHECK_THAT(checked.error().context, Catch::Contains("node 1"));
    }
    SECTION("a peer claiming this node's own id") {
        auto challenge = acceptor.challenge(identity(2).hello(nonce_from(rng)), nonce_from(rng));
        REQUIRE_FALSE(challenge.has_value());
        CHECK(challenge.error().is(queen::Errc::invalid_argument));
    }
}

TEST_CASE("net: a recorded proof does not open a second connection", "[net][handshake]") {
    Rng rng(11);
    const PeerIdentity dialer = identity(1);
    const PeerIdentity acceptor = identity(2);
    const Hello hello = dialer.hello(nonce_from(rng));
    auto first = acceptor.challenge(hello, nonce_from(rng));
    REQUIRE(first.has_value());
    auto proof = dialer.prove(hello, *first);
    REQUIRE(proof.has_value());
    REQUIRE(acceptor.check(hello, *first, *proof).has_value());
    // An eavesdropper replays hello and proof; the acceptor chose a fresh nonce this time.
    auto second = acceptor.challenge(hello, nonce_from(rng));
    REQUIRE(second.has_value());
    auto replayed = acceptor.check(hello, *second, *proof);
    REQUIRE_FALSE(replayed.has_value());
    CHECK(replayed.error().is(net::Errc::unauthenticated));
    // Any changed byte of the transcript breaks the proof too.
    Hello tampered = hello;
    tampered.nonce[0] ^= 1;
    CHECK_FALSE(acceptor.check(tampered, *first, *proof).has_value());
}

TEST_CASE("net: handshake messages refuse truncated or padded payloads", "[net][handshake]") {
    Rng rng(3);
    const Bytes hello = encode(identity(1).hello(nonce_from(rng)));
    for (std::size_t size = 0; size < hello.size(); ++size) {
        auto decoded = decode_hello(ByteSpan(hello.data(), size));
        REQUIRE_FALSE(decoded.has_value());
        CHECK(decoded.error().is(net::Errc::bad_message));
    }
    Bytes padded = hello;
    padded.push_back(0);
    CHECK_FALSE(decode_hello(padded).has_value());
    const Bytes proof = encode(Proof{});
    CHECK_FALSE(decode_proof(ByteSpan(proof.data(), proof.size() - 1)).has_value());
    CHECK_FALSE(decode_challenge(proof).has_value());
}

TEST_CASE("net: an identity needs a secret of 16 bytes, a cluster id and a node id",
          "[net][handshake]") {
    CHECK(
        PeerIdentity::make(cluster, NodeId{1}, "short").error().is(queen::Errc::invalid_argument));
    CHECK(PeerIdentity::make("", NodeId{1}, secret).error().is(queen::Errc::invalid_argument));
    CHECK(PeerIdentity::make(std::string(256, 'c'), NodeId{1}, secret)
              .error()
              .is(queen::Errc::invalid_argument));
    CHECK(PeerIdentity::make(cluster, NodeId{0}, secret).error().is(queen::Errc::invalid_argument));
}
