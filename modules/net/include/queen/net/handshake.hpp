// queen/net/handshake.hpp — how two nodes prove to each other that they belong to the same
// cluster before any raft message crosses their connection.
//
// Both nodes know the cluster id and the cluster secret (a shared token from the config). The
// dialer opens the connection; three frames follow:
//
//   dialer   -> hello      {version, cluster id, dialer node id, dialer nonce}
//   acceptor -> challenge  {acceptor node id, acceptor nonce, MAC_accept}
//   dialer   -> proof      {MAC_dial}
//
// MAC_x = HMAC-SHA256(secret, label_x | transcript), transcript = version | cluster id | both
// node ids | both nonces, label "queen peer accept v1" or "queen peer dial v1". Each side proves
// it holds the secret over nonces the other side chose, so a recorded handshake cannot be
// replayed, and the secret never crosses the wire. A refusal is a `refused` frame with the
// reason, then the connection closes. docs/cluster-protocol.md shows the bytes.
//
//     // dialer                                       // acceptor
//     Hello hello = dialer.hello(nonce_d);            // ...receives hello
//                                                     QUEEN_TRY(Challenge c,
//                                                               acceptor.challenge(hello,
//                                                               nonce_a));
//     // ...receives c
//     QUEEN_TRY(Proof p, dialer.prove(hello, c));     // ...receives p
//                                                     QUEEN_TRY(acceptor.check(hello, c, p));
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "queen/core/bytes.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/result.hpp"

namespace queen::net {

inline constexpr std::uint8_t peer_protocol_version = 1;

using Nonce = std::array<Byte, 32>;
using Mac = std::array<Byte, 32>;

struct Hello {
    std::uint8_t version = peer_protocol_version;
    std::string cluster_id;
    NodeId node;
    Nonce nonce{};
    friend bool operator==(const Hello&, const Hello&) = default;
};

struct Challenge {
    NodeId node;
    Nonce nonce{};
    Mac mac{};
    friend bool operator==(const Challenge&, const Challenge&) = default;
};

struct Proof {
    Mac mac{};
    friend bool operator==(const Proof&, const Proof&) = default;
};

/// Payload encodings of the handshake frames (FrameType::hello, challenge, proof).
[[nodiscard]] Bytes encode(const Hello& hello);
[[nodiscard]] Bytes encode(const Challenge& challenge);
[[nodiscard]] Bytes encode(const Proof& proof);
/// Errors: net::Errc::bad_message (truncated, trailing bytes, a cluster id over 255 bytes).
[[nodiscard]] Result<Hello> decode_hello(ByteSpan payload);
[[nodiscard]] Result<Challenge> decode_challenge(ByteSpan payload);
[[nodiscard]] Result<Proof> decode_proof(ByteSpan payload);

/// One node's side of handshakes: who it is and the cluster's secret. Immutable; safe to share
/// between threads.
class PeerIdentity {
public:
    /// `secret`: the cluster secret (any bytes, at least 16). Errors: Errc::invalid_argument
    /// (a shorter secret, an empty cluster id or one over 255 bytes, node id 0).
    [[nodiscard]] static Result<PeerIdentity> make(std::string cluster_id, NodeId node,
                                                   std::string secret);

    [[nodiscard]] const std::string& cluster_id() const noexcept { return cluster_id_; }
    [[nodiscard]] NodeId node() const noexcept { return node_; }

    /// Dialer: the first frame's message.
    [[nodiscard]] Hello hello(const Nonce& nonce) const;
    /// Acceptor: answers a hello with its challenge.
    /// Errors: Errc::unsupported_version, Errc::other_cluster, Errc::invalid_argument (the
    /// dialer claims this node's id).
    [[nodiscard]] Result<Challenge> challenge(const Hello& hello, const Nonce& nonce) const;
    /// Dialer: checks the acceptor's MAC and answers with its own.
    /// Errors: Errc::unauthenticated (the acceptor does not hold the secret).
    [[nodiscard]] Result<Proof> prove(const Hello& hello, const Challenge& challenge) const;
    /// Acceptor: checks the dialer's proof. Errors: Errc::unauthenticated.
    [[nodiscard]] Status check(const Hello& hello, const Challenge& challenge,
                               const Proof& proof) const;

private:
    PeerIdentity(std::string cluster_id, NodeId node, std::string secret)
        : cluster_id_(std::move(cluster_id)), node_(node), secret_(std::move(secret)) {}
    [[nodiscard]] Mac mac(bool is_accept, const Hello& hello, NodeId acceptor,
                          const Nonce& acceptor_nonce) const;

    std::string cluster_id_;
    NodeId node_;
    std::string secret_;
};

}  // namespace queen::net
