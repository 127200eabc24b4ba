// modules/node/src/key_exchange.hpp — how the nodes of a cluster come to hold one payload key:
// created once, then handed to every node that has none over the authenticated peer link.
//
// Why. The API of the node a client talks to seals payloads of encrypted queues before they
// enter the log, so every replica stores that ciphertext and any node may have to open it later
// (a pop through another node, a new leader after a failover). Every node of a cluster must run
// with the same key (docs/security.md, "Clusters").
//
// Who asks. A cluster node (cluster.peers set) with payload encryption on whose key would come
// from its data directory (none of QUEEN_ENCRYPTION_KEY, security.encryption_key,
// security.encryption_key_file set) and whose keys/payload.key does not exist: a node of a new
// cluster, or a node whose data directory was replaced. It never creates a key on its own.
// Explicit keys are used as they are (the operator gives every node the same one).
//
// The protocol. Server::start, after Cluster::start and before the tenants open and the API
// exists:
//   1. KeyExchange::start() registers the handlers of key_request and key_response, on every
//      cluster node whatever its key source, before it asks anyone, so two nodes that both wait
//      answer each other.
//   2. A node without its key calls obtain(): it sends key_request to every peer (again every
//      request_interval_ms once the peer answered, every resend_after_ms while it has not) and
//      waits.
//   3. A peer holding a key answers key_response with state `key` and the key, sealed; a peer
//      that waits for the key itself answers `none`; a peer with security.payload_encryption =
//      false answers `disabled`.
//   4. The first key that arrives is written to keys/payload.key (atomically, mode 0600,
//      write_key_file()) and used; a node never replaces its key file.
//   5. The creator is the node with the smallest id among the voters that did not answer
//      `disabled`. It creates the key only when every other peer has answered, each `none` or
//      `disabled`: never while a peer has not answered (it may be down holding the key). Every
//      other node keeps asking until a peer hands it the key.
//   So a node without a key completes its start only once a peer holding the key is reachable;
//   on the cluster's first start, once every node is up. Meanwhile start-up blocks and logs
//   `W cluster.key_waiting` every log_interval_ms naming the peers that have not answered and
//   those that answered without a key; obtain() asks `is_cancelled` between rounds (queen serve
//   stops on SIGTERM/SIGINT meanwhile).
//   6. A node that has its key, from any source, answers requests with it from then on, and
//      sends every peer one key_request carrying its fingerprint. A node holding a key that sees
//      a peer's request or response with another fingerprint logs `E cluster.key_mismatch`
//      naming both: the operator gave the nodes different keys, and what one node seals another
//      cannot open.
//
// The frames (types frame_type_key_request = 19 and frame_type_key_response = 20, cluster.hpp):
//   header  u8 version (1) | u8 state (0 none, 1 key, 2 disabled) | 16-byte session | fingerprint
//           (16 lower-case hex digits, state `key` only)
//   sealed  AES-256-GCM (api::SealingKey) under HMAC-SHA256(cluster.secret, "queen payload key
//           wrap v1"): nonce(12) | ciphertext | tag(16). The plaintext is the 32 key bytes in a
//           response of state `key`, empty otherwise (a request never carries the key). The
//           associated data is "queen key request v1" or "queen key response v1", the sender's
//           and the receiver's node id (u64 LE each), and the header.
// The session is a random value each start of a node draws; its requests carry it and the
// answers echo it, so an answer queued for an earlier start of the node is ignored. Frames after
// the peer handshake are neither encrypted nor authenticated: sealing keeps the key from whoever
// reads the peer network and authenticates every field of both frames (a forged `none` could
// otherwise make the creator create a second key). A frame that fails to open is logged
// (`W cluster.key_bad_frame`) and dropped.
//
//     auto exchange = KeyExchange::start(cluster, config.cluster.secret, true, clock, logger,
//                                        api::system_random());
//     if (key.is_pending) {
//         QUEEN_TRY(auto obtained, exchange->obtain(key.path, is_cancelled));  // blocks
//     } else {
//         exchange->serve(key.hex);
//     }
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cluster.hpp"
#include "queen/api/api.hpp"
#include "queen/api/sealing.hpp"
#include "queen/core/bytes.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/ids.hpp"
#include "queen/core/logger.hpp"
#include "queen/core/result.hpp"

namespace queen::node::detail {

inline constexpr std::uint8_t key_frame_version = 1;
/// The label of HMAC-SHA256(cluster.secret, label): the key that seals key frames.
inline constexpr std::string_view key_wrap_label = "queen payload key wrap v1";

/// What the sender of a key frame holds.
enum class KeyState : std::uint8_t {
    none = 0,      ///< no key yet: it waits for one itself
    key = 1,       ///< a key (its fingerprint in the frame; the key itself in a response)
    disabled = 2,  ///< security.payload_encryption = false
};

using KeySession = std::array<Byte, 16>;

/// One key_request or key_response, opened.
struct KeyFrame {
    KeyState state = KeyState::none;
    KeySession session{};
    std::string fingerprint;  ///< 16 hex digits with state `key`, else empty
    std::string key_hex;      ///< 64 lower-case hex digits in a response of state `key`, else empty
};

/// The frame of `type` (frame_type_key_request or frame_type_key_response) that `from` sends
/// `to`. A request carries no key (`frame.key_hex` is ignored); a response of state `key` must.
/// Errors: Errc::invalid_argument (state `key` without a fingerprint of 16 hex digits, or a
/// response without a key of 64 hex digits), Errc::internal (OpenSSL failed).
[[nodiscard]] Result<Bytes> seal_key_frame(std::uint8_t type, NodeId from, NodeId to,
                                           const KeyFrame& frame, const api::SealingKey& wrap,
                                           api::RandomSource& random);

/// Opens what seal_key_frame() made for the same `type`, `from` and `to` under the same key;
/// a response's key must have the fingerprint it names.
/// Errors: Errc::corruption (short, malformed, or authentication failed: another secret,
/// other ids or type, altered bytes), Errc::unsupported (another version).
[[nodiscard]] Result<KeyFrame> open_key_frame(std::uint8_t type, NodeId from, NodeId to,
                                              ByteSpan payload, const api::SealingKey& wrap);

/// This node's side of the key hand-off (see the top of this file). Created by start(); the
/// frame handlers it registers on the cluster keep it alive as long as the cluster.
/// Thread-safety: the handlers run on the transport thread; serve() and obtain() on another
/// (one at a time).
class KeyExchange : public std::enable_shared_from_this<KeyExchange> {
public:
    struct Options {
        std::int64_t request_interval_ms = 300;  ///< asks a peer that answered again after this
        std::int64_t resend_after_ms = 3'000;    ///< asks a peer that did not answer again
        std::int64_t log_interval_ms = 5'000;    ///< cluster.key_waiting while obtain() waits
        /// False on a node joining a running cluster (cluster.join): it never creates the key,
        /// it waits for a member to hand it over.
        bool may_create = true;
    };

    /// Registers the key frame handlers on `cluster` (call right after Cluster::start, before
    /// asking anyone). `is_encryption_enabled`: security.payload_encryption (off: the node
    /// answers `disabled`, and calls neither serve() nor obtain()). `cluster` must outlive every
    /// call of serve() and obtain().
    [[nodiscard]] static std::shared_ptr<KeyExchange> start(
        Cluster& cluster, std::string_view secret, bool is_encryption_enabled, const Clock& clock,
        Logger& logger, api::RandomSource& random, Options options);
    [[nodiscard]] static std::shared_ptr<KeyExchange> start(Cluster& cluster,
                                                            std::string_view secret,
                                                            bool is_encryption_enabled,
                                                            const Clock& clock, Logger& logger,
                                                            api::RandomSource& random) {
        return start(cluster, secret, is_encryption_enabled, clock, logger, random, Options{});
    }

    /// The node runs with `key_hex` (its settings or its key file): answers requests with it
    /// from now on, and asks every peer once to compare fingerprints.
    void serve(std::string key_hex);

    /// What obtain() came back with.
    struct Obtained {
        std::string key_hex;
        NodeId from;  ///< the peer that handed it over; 0 when this node created it
    };
    /// The cluster's key for a node that has none: asks the peers until one hands it over (or
    /// this node is the creator and every other peer answered without a key: then it draws a
    /// new key from the random source), writes it to `key_file` (write_key_file()) and serves
    /// it. Blocks meanwhile; `is_cancelled` (may be empty) is asked at least every
    /// request_interval_ms.
    /// Errors: Errc::cancelled (is_cancelled said so), those of write_key_file().
    [[nodiscard]] Result<Obtained> obtain(const std::filesystem::path& key_file,
                                          const std::function<bool()>& is_cancelled);

    KeyExchange(const KeyExchange&) = delete;
    KeyExchange& operator=(const KeyExchange&) = delete;

private:
    KeyExchange(Cluster& cluster, std::string_view secret, bool is_encryption_enabled,
                const Clock& clock, Logger& logger, api::RandomSource& random, Options options);
    void on_request(NodeId from, ByteSpan payload);
    void on_response(NodeId from, ByteSpan payload);
    /// Sends `to` a request carrying this node's state (outside the lock).
    bool send_request(NodeId to, KeyState state, const std::string& fingerprint);
    /// Logs cluster.key_mismatch when `peer_fingerprint` is not this node's (under the lock).
    void check_fingerprint(NodeId peer, const std::string& peer_fingerprint, const char* frame);
    /// Whether this node creates the key now (under the lock; see rule 5).
    [[nodiscard]] bool is_creator_now() const;

    Cluster& cluster_;
    const api::SealingKey wrap_;
    const bool is_encryption_enabled_;
    const Clock& clock_;
    Logger& logger_;
    api::RandomSource& random_;
    const Options options_;
    KeySession session_{};
    std::vector<NodeId> peers_;  // every voter but this node

    std::mutex mutex_;
    std::condition_variable changed_;
    std::string key_hex_;      // empty until the node has its key
    std::string fingerprint_;  // of key_hex_
    struct Peer {
        std::optional<KeyState> answer;  // its latest answer to this start's requests
        bool is_asked = false;
        bool is_outstanding = false;  // asked, not answered since
        std::int64_t asked_ns = 0;    // when last asked
    };
    std::map<NodeId, Peer> asked_;
    std::optional<Obtained> received_;  // the first key a peer handed over while waiting
    std::set<NodeId> disabled_logged_;
    std::map<NodeId, KeySession> answered_;  // the session of each peer's latest request
};

}  // namespace queen::node::detail
