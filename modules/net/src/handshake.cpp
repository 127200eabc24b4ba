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

/// Reads fixed-size fields from a payload; any shortfall or leftover is bad_message.
class Reader {
public:
    Reader(ByteSpan payload, const char* what) : payload_(payload), what_(what) {}

    bool byte(std::uint8_t& out) {
        if (!has(1)) {
            return false;
        }
        out = payload_[at_++];
        return true;
    }
    bool u64(std::uint64_t& out) {
        if (!has(8)) {
            return false;
        }
        out = load_le<std::uint64_t>(payload_.data() + at_);
        at_ += 8;
        return true;
    }
    template <std::size_t N>
    bool bytes(std::array<Byte, N>& out) {
        if (!has(N)) {
            return false;
        }
        std::memcpy(out.data(), payload_.data() + at_, N);
        at_ += N;
        return true;
    }
    bool text(std::string& out, std::size_t size) {
        if (!has(size)) {
            return false;
        }
        out.assign(reinterpret_cast<const char*>(payload_.data() + at_), size);
        at_ += size;
        return true;
    }
    [[nodiscard]] Status finish(bool is_ok) const {
        if (!is_ok || at_ != payload_.size()) {
            return Error{Errc::bad_message, std::string(what_) + " of " +
                                                std::to_string(payload_.size()) +
                                                " bytes does not decode"};
        }
        return {};
    }

private:
    bool has(std::size_t n) const { return payload_.size() - at_ >= n; }

    ByteSpan payload_;
    const char* what_;
    std::size_t at_ = 0;
};

void put_u64(Bytes& out, std::uint64_t value) {
    const std::size_t at = out.size();
    out.resize(at + 8);
    store_le<std::uint64_t>(out.data() + at, value);
}

template <std::size_t N>
void put_bytes(Bytes& out, const std::array<Byte, N>& bytes) {
    out.insert(out.end(), bytes.begin(), bytes.end());
}

}  // namespace

Bytes encode(const Hello& hello) {
    QUEEN_ASSERT(hello.cluster_id.size() <= cluster_id_bytes_max, "net: cluster id too long");
    const std::size_t id_size = hello.cluster_id.size();
    Bytes out(2 + id_size);
    out[0] = hello.version;
    out[1] = static_cast<Byte>(id_size);
    std::memcpy(out.data() + 2, hello.cluster_id.data(), id_size);
    put_u64(out, hello.node.value());
    put_bytes(out, hello.nonce);
    return out;
}

Bytes encode(const Challenge& challenge) {
    Bytes out;
    put_u64(out, challenge.node.value());
    put_bytes(out, challenge.nonce);
    put_bytes(out, challenge.mac);
    return out;
}

Bytes encode(const Proof& proof) {
    Bytes out;
    put_bytes(out, proof.mac);
    return out;
}

Result<Hello> decode_hello(ByteSpan payload) {
    Reader in(payload, "hello");
    Hello hello;
    std::uint8_t id_size = 0;
    std::uint64_t node = 0;
    const bool is_ok = in.byte(hello.version) && in.byte(id_size) &&
                       in.text(hello.cluster_id, id_size) && in.u64(node) && in.bytes(hello.nonce);
    QUEEN_TRY(in.finish(is_ok));
    hello.node = NodeId{node};
    return hello;
}

Result<Challenge> decode_challenge(ByteSpan payload) {
    Reader in(payload, "challenge");
    Challenge challenge;
    std::uint64_t node = 0;
    const bool is_ok = in.u64(node) && in.bytes(challenge.nonce) && in.bytes(challenge.mac);
    QUEEN_TRY(in.finish(is_ok));
    challenge.node = NodeId{node};
    return challenge;
}

Result<Proof> decode_proof(ByteSpan payload) {
    Reader in(payload, "proof");
    Proof proof;
    QUEEN_TRY(in.finish(in.bytes(proof.mac)));
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
    const std::string_view label = is_accept ? accept_label : dial_label;
    transcript.insert(transcript.end(), label.begin(), label.end());
    const Bytes hello_bytes = encode(hello);
    transcript.insert(transcript.end(), hello_bytes.begin(), hello_bytes.end());
    put_u64(transcript, acceptor.value());
    put_bytes(transcript, acceptor_nonce);
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
        return Error{Errc::unauthenticated, "node " + std::to_string(challenge.node.value()) +
                                                " does not hold this cluster's secret (the two "
                                                "nodes were given different secrets)"};
    }
    return Proof{mac(false, hello, challenge.node, challenge.nonce)};
}

Status PeerIdentity::check(const Hello& hello, const Challenge& challenge,
                           const Proof& proof) const {
    const Mac expected = mac(false, hello, challenge.node, challenge.nonce);
    if (CRYPTO_memcmp(expected.data(), proof.mac.data(), expected.size()) != 0) {
        return Error{Errc::unauthenticated, "node " + std::to_string(hello.node.value()) +
                                                " does not hold this cluster's secret (the two "
                                                "nodes were given different secrets)"};
    }
    return {};
}

}  // namespace queen::net
