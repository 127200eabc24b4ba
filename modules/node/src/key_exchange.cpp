// modules/node/src/key_exchange.cpp — the payload key hand-off between cluster nodes.
#include "key_exchange.hpp"

#include <algorithm>
#include <chrono>
#include <sstream>

#include "encryption_key.hpp"
#include "queen/core/assert.hpp"
#include "queen/core/hex.hpp"

namespace queen::node::detail {
namespace {

constexpr std::size_t key_bytes = 32;
constexpr std::size_t fingerprint_chars = 16;
constexpr std::string_view request_label = "queen key request v1";
constexpr std::string_view response_label = "queen key response v1";

bool is_lower_hex(std::string_view text, std::size_t size) {
    return text.size() == size && std::all_of(text.begin(), text.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

/// Overwrites key material before it is freed (volatile: the stores are not optimized away).
void wipe(std::uint8_t* data, std::size_t size) {
    volatile std::uint8_t* bytes = data;
    for (std::size_t i = 0; i < size; ++i) {
        bytes[i] = 0;
    }
}

std::string to_hex(ByteSpan bytes) {
    std::string hex(bytes.size() * 2, '0');
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        hex[2 * i] = hex_pairs[2 * bytes[i]];
        hex[2 * i + 1] = hex_pairs[2 * bytes[i] + 1];
    }
    return hex;
}

/// label | from | to | header: what the tag of a key frame authenticates besides its plaintext.
Bytes associated_data(std::uint8_t type, NodeId from, NodeId to, ByteSpan header) {
    const std::string_view label = type == frame_type_key_request ? request_label : response_label;
    Bytes associated;
    ByteWriter writer(associated);
    writer.raw(as_bytes(label));
    writer.fixed<std::uint64_t>(from.value());
    writer.fixed<std::uint64_t>(to.value());
    writer.raw(header);
    return associated;
}

std::string fingerprint_of(std::string_view key_hex) {
    auto fingerprint = api::encryption_key_fingerprint(key_hex);
    return fingerprint ? std::move(fingerprint).value() : std::string("?");
}

/// "2,3", or "-" for none.
std::string id_list(const std::vector<NodeId>& ids) {
    if (ids.empty()) {
        return "-";
    }
    std::ostringstream text;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        text << (i == 0 ? "" : ",") << ids[i];
    }
    return text.str();
}

}  // namespace

Result<Bytes> seal_key_frame(std::uint8_t type, NodeId from, NodeId to, const KeyFrame& frame,
                             const api::SealingKey& wrap, api::RandomSource& random) {
    QUEEN_ASSERT(type == frame_type_key_request || type == frame_type_key_response,
                 "not a key frame type: ", int(type));
    const bool has_key = frame.state == KeyState::key;
    if (has_key && !is_lower_hex(frame.fingerprint, fingerprint_chars)) {
        return Error{Errc::invalid_argument, "a key frame of state key names its fingerprint"};
    }
    std::array<std::uint8_t, key_bytes> key{};
    const bool carries_key = has_key && type == frame_type_key_response;
    if (carries_key && !decode_hex(frame.key_hex, key)) {
        return Error{Errc::invalid_argument, "a key response carries a key of 64 hex digits"};
    }
    Bytes out;
    ByteWriter writer(out);
    writer.u8(key_frame_version);
    writer.u8(static_cast<std::uint8_t>(frame.state));
    writer.raw(frame.session);
    if (has_key) {
        writer.raw(as_bytes(frame.fingerprint));
    }
    const Bytes associated = associated_data(type, from, to, out);
    auto sealed = wrap.seal(carries_key ? ByteSpan(key) : ByteSpan(), associated, random);
    wipe(key.data(), key.size());
    if (!sealed) {
        return std::move(sealed).error();
    }
    writer.raw(*sealed);
    return out;
}

Result<KeyFrame> open_key_frame(std::uint8_t type, NodeId from, NodeId to, ByteSpan payload,
                                const api::SealingKey& wrap) {
    ByteReader reader(payload);
    const std::uint8_t version = reader.u8();
    const std::uint8_t state = reader.u8();
    KeyFrame frame;
    const ByteSpan session = reader.raw(frame.session.size());
    if (!reader.ok()) {
        return Error{Errc::corruption, "key frame: " + std::to_string(payload.size()) + " bytes"};
    }
    if (version != key_frame_version) {
        return Error{Errc::unsupported, "key frame version " + std::to_string(version) +
                                            ", this node speaks " +
                                            std::to_string(key_frame_version)};
    }
    if (state > static_cast<std::uint8_t>(KeyState::disabled)) {
        return Error{Errc::corruption, "key frame: state " + std::to_string(state)};
    }
    frame.state = static_cast<KeyState>(state);
    std::copy(session.begin(), session.end(), frame.session.begin());
    if (frame.state == KeyState::key) {
        frame.fingerprint = std::string(as_chars(reader.raw(fingerprint_chars)));
    }
    if (!reader.ok() || reader.remaining() < api::sealed_overhead_bytes) {
        return Error{Errc::corruption, "key frame: " + std::to_string(payload.size()) + " bytes"};
    }
    const std::size_t header_bytes = payload.size() - reader.remaining();
    const Bytes associated = associated_data(type, from, to, payload.first(header_bytes));
    auto opened = wrap.open(payload.subspan(header_bytes), associated);
    if (!opened) {
        return Error{Errc::corruption,
                     "key frame failed authentication (another cluster.secret, or altered)"};
    }
    Bytes plain = std::move(opened).value();
    const bool carries_key = frame.state == KeyState::key && type == frame_type_key_response;
    const std::size_t expected = carries_key ? key_bytes : 0;
    if (plain.size() != expected) {
        wipe(plain.data(), plain.size());
        return Error{Errc::corruption, "key frame: " + std::to_string(plain.size()) +
                                           " bytes sealed, expected " + std::to_string(expected)};
    }
    if (frame.state == KeyState::key && !is_lower_hex(frame.fingerprint, fingerprint_chars)) {
        return Error{Errc::corruption, "key frame: a fingerprint that is not 16 hex digits"};
    }
    if (carries_key) {
        frame.key_hex = to_hex(plain);
        wipe(plain.data(), plain.size());
        if (fingerprint_of(frame.key_hex) != frame.fingerprint) {
            return Error{Errc::corruption, "key frame: the key does not have the fingerprint " +
                                               frame.fingerprint + " it names"};
        }
    }
    return frame;
}

KeyExchange::KeyExchange(Cluster& cluster, std::string_view secret, bool is_encryption_enabled,
                         const Clock& clock, Logger& logger, api::RandomSource& random,
                         Options options)
    : cluster_(cluster),
      wrap_(api::SealingKey::derive(secret, key_wrap_label)),
      is_encryption_enabled_(is_encryption_enabled),
      clock_(clock),
      logger_(logger),
      random_(random),
      options_(options) {
    random_.fill(session_.data(), session_.size());
    for (const NodeId voter : cluster.configured_nodes()) {
        if (voter != cluster.self()) {
            peers_.push_back(voter);
        }
    }
}

std::shared_ptr<KeyExchange> KeyExchange::start(Cluster& cluster, std::string_view secret,
                                                bool is_encryption_enabled, const Clock& clock,
                                                Logger& logger, api::RandomSource& random,
                                                Options options) {
    std::shared_ptr<KeyExchange> exchange(
        new KeyExchange(cluster, secret, is_encryption_enabled, clock, logger, random, options));
    cluster.set_frame_handler(frame_type_key_request, [exchange](NodeId from, ByteSpan payload) {
        exchange->on_request(from, payload);
    });
    cluster.set_frame_handler(frame_type_key_response, [exchange](NodeId from, ByteSpan payload) {
        exchange->on_response(from, payload);
    });
    return exchange;
}

bool KeyExchange::send_request(NodeId to, KeyState state, const std::string& fingerprint) {
    KeyFrame frame;
    frame.state = state;
    frame.session = session_;
    frame.fingerprint = fingerprint;
    auto sealed =
        seal_key_frame(frame_type_key_request, cluster_.self(), to, frame, wrap_, random_);
    if (!sealed) {
        QUEEN_LOG(logger_, Level::error, "cluster.key_request_failed",
                  "peer=" << to << " error=\"" << sealed.error().message() << "\"");
        return false;
    }
    return cluster_.send_frame(to, frame_type_key_request, *sealed);
}

void KeyExchange::serve(std::string key_hex) {
    std::string fingerprint = fingerprint_of(key_hex);
    {
        std::lock_guard lock(mutex_);
        key_hex_ = std::move(key_hex);
        fingerprint_ = fingerprint;
    }
    // The peers' answers (or, when they start later, their own requests) show whether every
    // node holds this key.
    for (const NodeId peer : peers_) {
        (void)send_request(peer, KeyState::key, fingerprint);
    }
}

void KeyExchange::check_fingerprint(NodeId peer, const std::string& peer_fingerprint,
                                    const char* frame) {
    if (!fingerprint_.empty() && peer_fingerprint != fingerprint_) {
        QUEEN_LOG(logger_, Level::error, "cluster.key_mismatch",
                  "peer=" << peer << " peer_fingerprint=" << peer_fingerprint
                          << " fingerprint=" << fingerprint_ << " seen_in=" << frame
                          << " note=\"the nodes run with different payload keys: payloads one "
                             "seals, the other cannot open; give every node the same key "
                             "(docs/security.md)\"");
    }
}

void KeyExchange::on_request(NodeId from, ByteSpan payload) {
    auto request = open_key_frame(frame_type_key_request, from, cluster_.self(), payload, wrap_);
    if (!request) {
        QUEEN_LOG(
            logger_, Level::warn, "cluster.key_bad_frame",
            "peer=" << from << " frame=key_request error=\"" << request.error().message() << "\"");
        return;
    }
    KeyFrame response;
    response.session = request->session;
    bool is_first_answer = false;  // to this start of the peer
    {
        std::lock_guard lock(mutex_);
        auto [answered, is_new] = answered_.try_emplace(from, request->session);
        is_first_answer = is_new || answered->second != request->session;
        answered->second = request->session;
        if (request->state == KeyState::key) {
            check_fingerprint(from, request->fingerprint, "key_request");
        }
        if (!is_encryption_enabled_) {
            response.state = KeyState::disabled;
        } else if (!key_hex_.empty()) {
            response.state = KeyState::key;
            response.fingerprint = fingerprint_;
            response.key_hex = key_hex_;
        }
    }
    auto sealed =
        seal_key_frame(frame_type_key_response, cluster_.self(), from, response, wrap_, random_);
    wipe(reinterpret_cast<std::uint8_t*>(response.key_hex.data()), response.key_hex.size());
    if (!sealed) {
        QUEEN_LOG(logger_, Level::error, "cluster.key_response_failed",
                  "peer=" << from << " error=\"" << sealed.error().message() << "\"");
        return;
    }
    const bool is_sent = cluster_.send_frame(from, frame_type_key_response, *sealed);
    // Requests queued while this node was unreachable arrive together: one line per start.
    if (is_first_answer && request->state == KeyState::none && response.state == KeyState::key) {
        QUEEN_LOG(logger_, Level::info, "cluster.key_sent",
                  "peer=" << from << " fingerprint=" << response.fingerprint
                          << " queued=" << (is_sent ? "true" : "false"));
    }
}

void KeyExchange::on_response(NodeId from, ByteSpan payload) {
    auto response = open_key_frame(frame_type_key_response, from, cluster_.self(), payload, wrap_);
    if (!response) {
        QUEEN_LOG(logger_, Level::warn, "cluster.key_bad_frame",
                  "peer=" << from << " frame=key_response error=\"" << response.error().message()
                          << "\"");
        return;
    }
    if (response->session != session_) {
        return;  // an answer to an earlier start of this node
    }
    {
        std::lock_guard lock(mutex_);
        auto found = asked_.find(from);
        if (found != asked_.end()) {
            found->second.answer = response->state;
            found->second.is_outstanding = false;
        }
        if (response->state == KeyState::disabled && disabled_logged_.insert(from).second) {
            QUEEN_LOG(logger_, Level::warn, "cluster.key_peer_disabled",
                      "peer=" << from
                              << " note=\"the peer runs with security.payload_encryption = "
                                 "false\"");
        }
        if (response->state == KeyState::key) {
            if (key_hex_.empty() && !received_) {
                received_ = Obtained{std::move(response->key_hex), from};
            } else if (!key_hex_.empty()) {
                check_fingerprint(from, response->fingerprint, "key_response");
            } else if (fingerprint_of(received_->key_hex) != response->fingerprint) {
                QUEEN_LOG(logger_, Level::error, "cluster.key_mismatch",
                          "peer=" << from << " peer_fingerprint=" << response->fingerprint
                                  << " fingerprint=" << fingerprint_of(received_->key_hex)
                                  << " from=" << received_->from
                                  << " note=\"two peers hold different payload keys\"");
            }
        }
    }
    wipe(reinterpret_cast<std::uint8_t*>(response->key_hex.data()), response->key_hex.size());
    changed_.notify_all();
}

bool KeyExchange::is_creator_now() const {
    // The smallest id among this node and the peers that answered `none`; every peer answered.
    if (!options_.may_create) {
        return false;
    }
    for (const NodeId peer : peers_) {
        const auto found = asked_.find(peer);
        if (found == asked_.end() || !found->second.answer) {
            return false;
        }
        const KeyState answer = *found->second.answer;
        if (answer == KeyState::key || (answer == KeyState::none && peer < cluster_.self())) {
            return false;
        }
    }
    return true;
}

Result<KeyExchange::Obtained> KeyExchange::obtain(const std::filesystem::path& key_file,
                                                  const std::function<bool()>& is_cancelled) {
    QUEEN_ASSERT(is_encryption_enabled_, "obtain() with payload encryption off");
    const std::int64_t started_ns = clock_.monotonic_ns();
    std::int64_t next_log_ns = started_ns + options_.log_interval_ms * 1'000'000;
    const std::int64_t interval_ns = options_.request_interval_ms * 1'000'000;
    const std::int64_t resend_ns = options_.resend_after_ms * 1'000'000;
    QUEEN_LOG(logger_, Level::info, "cluster.key_asking",
              "peers=" << id_list(peers_) << " key_file=" << key_file.string()
                       << " note=\"no payload key yet: waiting for a peer to hand over the "
                          "cluster's key\"");
    Obtained obtained;
    std::unique_lock lock(mutex_);
    for (const NodeId peer : peers_) {
        asked_[peer];
    }
    while (true) {
        if (received_) {
            obtained = std::move(*received_);
            received_.reset();
            break;
        }
        if (is_creator_now()) {
            std::array<std::uint8_t, key_bytes> key{};
            random_.fill(key.data(), key.size());
            obtained.key_hex = to_hex(key);
            wipe(key.data(), key.size());
            std::vector<NodeId> without;
            for (const auto& [peer, state] : asked_) {
                if (state.answer == KeyState::none) {
                    without.push_back(peer);
                }
            }
            QUEEN_LOG(logger_, Level::info, "cluster.key_created",
                      "peers_without_key=" << id_list(without)
                                           << " fingerprint=" << fingerprint_of(obtained.key_hex)
                                           << " note=\"every peer answered and none has a key: "
                                              "this node (the smallest id) creates the cluster's "
                                              "key\"");
            break;
        }
        if (is_cancelled && is_cancelled()) {
            return Error{Errc::cancelled,
                         "stopped while waiting for a peer to hand over the payload key"};
        }
        const std::int64_t now = clock_.monotonic_ns();
        std::vector<NodeId> to_ask;
        for (auto& [peer, state] : asked_) {
            const std::int64_t since = now - state.asked_ns;
            if (!state.is_asked || since >= (state.is_outstanding ? resend_ns : interval_ns)) {
                to_ask.push_back(peer);
                state.is_asked = true;
                state.asked_ns = now;
                state.is_outstanding = true;
            }
        }
        if (now >= next_log_ns) {
            next_log_ns = now + options_.log_interval_ms * 1'000'000;
            std::vector<NodeId> unanswered;
            std::vector<NodeId> without;
            for (const auto& [peer, state] : asked_) {
                if (!state.answer) {
                    unanswered.push_back(peer);
                } else if (state.answer != KeyState::key) {
                    without.push_back(peer);
                }
            }
            QUEEN_LOG(logger_, Level::warn, "cluster.key_waiting",
                      "waited_ms=" << (now - started_ns) / 1'000'000 << " unanswered="
                                   << id_list(unanswered) << " without_key=" << id_list(without)
                                   << " note=\"this node has no payload key and starts once a "
                                      "peer holding the cluster's key answers (on the "
                                      "cluster's first start: once every peer answered)\"");
        }
        lock.unlock();
        for (const NodeId peer : to_ask) {
            if (!send_request(peer, KeyState::none, {})) {
                std::lock_guard relock(mutex_);
                asked_[peer].is_outstanding = false;  // dropped: ask again next round
            }
        }
        lock.lock();
        if (!received_ && !is_creator_now()) {
            changed_.wait_for(lock, std::chrono::milliseconds(options_.request_interval_ms));
        }
    }
    lock.unlock();
    QUEEN_TRY(write_key_file(key_file, obtained.key_hex));
    if (obtained.from.value() != 0) {
        QUEEN_LOG(logger_, Level::info, "cluster.key_received",
                  "peer=" << obtained.from << " fingerprint=" << fingerprint_of(obtained.key_hex)
                          << " path=" << key_file.string());
    }
    serve(obtained.key_hex);
    return obtained;
}

}  // namespace queen::node::detail
