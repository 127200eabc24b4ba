// modules/net/src/handshake.cpp — handshake message codecs and the HMAC-SHA256 proofs.
#include "queen/net/handshake.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstring>

#include "queen/core/assert.hpp"
#include "queen/net/errc.hpp"

namespace queen::net {

namespace {

constexpr std::size_t secret_bytes_min = 16;
constexpr std::size_t cluster_id_bytes_max = 255;
constexpr std::string_view accept_label = "queen peer accept v1";
constexpr std::string_view dial_label = "queen peer dial v1";

template <std::size_t N>
void read_array(ByteReader& in, std::array<Byte, N>& out) {
    const ByteSpan bytes = in.raw(N);
    std::copy(bytes.begin(), bytes.end(), out.begin());
}

/// Every field read and nothing left over, or bad_message naming the message.
Status finish(const ByteReader& in, ByteSpan payload, const char* what) {
    if (!in.ok() || !in.at_end()) {
        return Error{
            Errc::bad_message,
            std::string(what) + " of " + std::to_string(payload.size()) + " bytes does not decode"};
    }
    return {};
}

Error unauthenticated(NodeId peer) {
    return Error{Errc::unauthenticated,
                 "node " + std::to_string(peer.value()) +
                     " does not hold this cluster's secret (the two nodes were given different "
                     "secrets)"};
}

}  // namespace

Bytes encode(const Hello& hello) {
    QUEEN_ASSERT(hello.cluster_id.size() <= cluster_id_bytes_max, "net: cluster id too long");
    Bytes out;
    ByteWriter w(out);
    w.u8(hello.version);
    w.u8(static_cast<std::uint8_t>(hello.cluster_id.size()));
    w.raw(as_bytes(hello.cluster_id));
    w.fixed<std::uint64_t>(hello.node.value());
    w.raw(hello.nonce);
    return out;
}

Bytes encode(const Challenge& challenge) {
    Bytes out;
    ByteWriter w(out);
    w.fixed<std::uint64_t>(challenge.node.value());
    w.raw(challenge.nonce);
    w.raw(challenge.mac);
    return out;
}

Bytes encode(const Proof& proof) {
    return Bytes(proof.mac.begin(), proof.mac.end());
}

Result<Hello> decode_hello(ByteSpan payload) {
    ByteReader in(payload);
    Hello hello;
    hello.version = in.u8();
    hello.cluster_id = std::string(as_chars(in.raw(in.u8())));
    hello.node = NodeId{in.fixed<std::uint64_t>()};
    read_array(in, hello.nonce);
    QUEEN_TRY(finish(in, payload, "hello"));
    return hello;
}

Result<Challenge> decode_challenge(ByteSpan payload) {
    ByteReader in(payload);
    Challenge challenge;
    challenge.node = NodeId{in.fixed<std::uint64_t>()};
    read_array(in, challenge.nonce);
    read_array(in, challenge.mac);
    QUEEN_TRY(finish(in, payload, "challenge"));
    return challenge;
}

Result<Proof> decode_proof(ByteSpan payload) {
    ByteReader in(payload);
    Proof proof;
    read_array(in, proof.mac);
    QUEEN_TRY(finish(in, payload, "proof"));
    return proof;
}

Result<PeerIdentity> PeerIdentity::make(std::string cluster_id, NodeId node, std::string secret) {
    if (secret.size() < secret_bytes_min) {
        return Error{queen::Errc::invalid_argument,
                     "the cluster secret has " + std::to_string(secret.size()) +
                         " bytes; it needs at least " + std::to_string(secret_bytes_min)};
    }
    if (cluster_id.empty() || cluster_id.size() > cluster_id_bytes_max) {
        return Error{queen::Errc::invalid_argument, "a cluster id has 1 to 255 bytes"};
    }
    if (node.value() == 0) {
        return Error{queen::Errc::invalid_argument, "node id 0 is not a node"};
    }
    return PeerIdentity(std::move(cluster_id), node, std::move(secret));
}

Hello PeerIdentity::hello(const Nonce& nonce) const {
    return Hello{peer_protocol_version, cluster_id_, node_, nonce};
}

Mac PeerIdentity::mac(bool is_accept, const Hello& hello, NodeId acceptor,
                      const Nonce& acceptor_nonce) const {
    Bytes transcript;
    ByteWriter w(transcript);
    w.raw(as_bytes(is_accept ? accept_label : dial_label));
    w.raw(encode(hello));
    w.fixed<std::uint64_t>(acceptor.value());
    w.raw(acceptor_nonce);
    Mac mac{};
    unsigned int size = 0;
    const auto* digest = HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
                              transcript.data(), transcript.size(), mac.data(), &size);
    QUEEN_ASSERT(digest != nullptr && size == mac.size(), "net: HMAC-SHA256 failed");
    return mac;
}

Result<Challenge> PeerIdentity::challenge(const Hello& hello, const Nonce& nonce) const {
    if (hello.version != peer_protocol_version) {
        return Error{Errc::unsupported_version, "node " + std::to_string(hello.node.value()) +
                                                    " speaks peer protocol " +
                                                    std::to_string(hello.version) + ", this node " +
                                                    std::to_string(peer_protocol_version)};
    }
    if (hello.cluster_id != cluster_id_) {
        return Error{Errc::other_cluster, "node " + std::to_string(hello.node.value()) +
                                              " belongs to cluster " + hello.cluster_id +
                                              ", this node to " + cluster_id_};
    }
    if (hello.node == node_) {
        return Error{queen::Errc::invalid_argument,
                     "a peer claims this node's own id " + std::to_string(node_.value())};
    }
    return Challenge{node_, nonce, mac(true, hello, node_, nonce)};
}

Result<Proof> PeerIdentity::prove(const Hello& hello, const Challenge& challenge) const {
    const Mac expected = mac(true, hello, challenge.node, challenge.nonce);
    if (CRYPTO_memcmp(expected.data(), challenge.mac.data(), expected.size()) != 0) {
        return unauthenticated(challenge.node);
    }
    return Proof{mac(false, hello, challenge.node, challenge.nonce)};
}

Status PeerIdentity::check(const Hello& hello, const Challenge& challenge,
                           const Proof& proof) const {
    const Mac expected = mac(false, hello, challenge.node, challenge.nonce);
    if (CRYPTO_memcmp(expected.data(), proof.mac.data(), expected.size()) != 0) {
        return unauthenticated(hello.node);
    }
    return {};
}

}  // namespace queen::net
