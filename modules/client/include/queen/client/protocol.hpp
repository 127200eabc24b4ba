// queen/client/protocol.hpp — request builders and answer readers of the hot endpoints (push, pop,
// batch ack, transaction): the blocking Client and callers that do their own I/O (HttpMultiplexer)
// share them. No I/O here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "queen/client/connection.hpp"
#include "queen/client/types.hpp"
#include "queen/core/clock.hpp"
#include "queen/core/result.hpp"
#include "queen/core/rng.hpp"

namespace queen::client {

/// A request that owns its target and body. Building into the same OwnedRequest again reuses
/// their storage, so a request loop stops allocating per request.
struct OwnedRequest {
    std::string method = "GET";
    std::string target = "/";
    std::string body;
    bool has_body = false;
    bool is_idempotent = true;
    std::int64_t timeout_ms = 0;  ///< 0: the connection's default
    /// A view for Connection::request() / HttpMultiplexer::start(); valid while this object is
    /// unchanged.
    [[nodiscard]] HttpRequest view() const noexcept;
};

/// Where generated transactionIds come from.
class IdSource {
public:
    virtual ~IdSource() = default;
    /// Appends a fresh UUIDv7 (36 lowercase characters).
    virtual void append_uuid_v7(std::string& out) = 0;
};

/// UUIDv7s from the clock's wall time and a seeded generator. Not thread-safe.
class UuidV7Generator final : public IdSource {
public:
    /// Ids of one generator ascend: a millisecond's first id takes fresh random bits, the next
    /// ones in the same millisecond add one to it (RFC 9562 6.2, method 2). The seed is mixed
    /// with the clock's readings; `clock` must outlive the generator.
    UuidV7Generator(std::uint64_t seed, const queen::Clock& clock);
    void append_uuid_v7(std::string& out) override;

private:
    const queen::Clock& clock_;
    queen::Rng rng_;
    std::uint64_t last_ms_ = 0;  // the timestamp of the last id made
    std::uint64_t last_high_ = 0;
    std::uint64_t last_low_ = 0;
};

/// Success for a 2xx answer; otherwise the HTTP status error (http_status_of() gives the status)
/// carrying the server's {"error"} text.
[[nodiscard]] queen::Status check_http_status(const HttpRequest& request,
                                              const HttpResponse& response);

/// Builds POST /api/v1/push for `items` (not empty). Items without a transaction_id get one from
/// `ids`. Errors: Errc::invalid_argument (no items; with is_payload_validated, an item whose
/// payload_json is not JSON).
[[nodiscard]] queen::Status build_push(std::span<const PushItem> items, bool is_payload_validated,
                                       IdSource& ids, OwnedRequest& out);
/// Reads the answer to a push of `item_count` items into `results` (one per item, in order),
/// reusing the storage of the vector and its strings. Errors: an HTTP status error (see
/// check_http_status), Errc::rejected ({"success": false}), Errc::bad_response (not the
/// documented shape, or a result count other than item_count); `results` is then unspecified.
[[nodiscard]] queen::Status read_push_answer(const HttpRequest& request,
                                             const HttpResponse& response, std::size_t item_count,
                                             std::vector<PushResult>& results);

/// Builds GET /api/v1/pop/queue/... or, for a request without a queue, GET /api/v1/pop with its
/// namespace and task; a long poll's deadline is its timeout_ms plus `wait_margin_ms`.
/// Errors: Errc::invalid_argument (batch or partitions < 1, timeout_ms < 0; no queue and
/// neither a namespace nor a task; a partition without a queue).
[[nodiscard]] queen::Status build_pop(const PopRequest& request, std::int64_t wait_margin_ms,
                                      OwnedRequest& out);
/// Reads a pop answer (204: no messages) into `result`, reusing its storage; every field is
/// overwritten. Errors: as read_push_answer.
[[nodiscard]] queen::Status read_pop_answer(const HttpRequest& request,
                                            const HttpResponse& response, const PopRequest& pop,
                                            PopResult& result);

/// Builds POST /api/v1/ack/batch (`acks` not empty). A non-empty `consumer_group` overrides the
/// group of every ack; empty sends null.
void build_ack_batch(std::span<const Ack> acks, std::string_view consumer_group, OwnedRequest& out);
/// Builds the same request as build_ack_batch() over Ack::of(message, status) of every popped
/// message (`messages` not empty), reading their ids, lease and group in place instead of
/// copying them into Ack values first.
void build_ack_batch(std::span<const Message> messages, AckStatus status,
                     std::string_view consumer_group, OwnedRequest& out);
/// Reads the answer to a batch of `ack_count` acks into `results` (input order), reusing its
/// storage. A logical failure is a result with is_success false. Errors: as read_push_answer.
[[nodiscard]] queen::Status read_ack_batch_answer(const HttpRequest& request,
                                                  const HttpResponse& response,
                                                  std::size_t ack_count,
                                                  std::vector<AckResult>& results);

/// Builds POST /api/v1/transaction (not idempotent: never resent), with its "next" pop when
/// request.next is set. Pushed items without a transaction_id get one from `ids`. Errors:
/// Errc::invalid_argument (no operations; a next pop without a queue or with a batch < 1; with
/// is_payload_validated, a push item whose payload is not JSON).
[[nodiscard]] queen::Status build_transaction(const TransactionRequest& request,
                                              bool is_payload_validated, IdSource& ids,
                                              OwnedRequest& out);
/// Reads a transaction answer into `result` (its results are replaced). A committed answer's
/// "next" is read like a pop answer into result.next (one pass over the body, reusing the
/// storage of an earlier result.next); without one, or on any error, result.next is empty.
/// Errors: as read_push_answer (also a "next" that is not a pop answer); a rolled-back
/// transaction is Errc::rejected with the server's reason.
[[nodiscard]] queen::Status read_transaction_answer(const HttpRequest& request,
                                                    const HttpResponse& response,
                                                    TransactionResult& result);

}  // namespace queen::client
