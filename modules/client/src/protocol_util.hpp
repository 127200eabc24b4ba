// client/src/protocol_util.hpp — answer helpers shared by the protocol and Client sources: error
// texts, rejection checks (nlohmann and the core reader), ack results, pop answer objects and ack
// members written with the core writer. Private to the client.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "queen/client/connection.hpp"
#include "queen/client/types.hpp"
#include "queen/core/json_cursor.hpp"
#include "queen/core/json_writer.hpp"
#include "queen/core/result.hpp"

namespace queen::client::detail {

/// "<method> <target>", the prefix of every error's context.
[[nodiscard]] std::string describe(const HttpRequest& request);
/// Errc::bad_response: "<method> <target>: <why>".
[[nodiscard]] queen::Error shape_error(const HttpRequest& request, const std::string& why);
/// The server's {"error": "..."} text, or "HTTP <status>" with a little of an unexpected body.
[[nodiscard]] std::string error_message_of(const HttpResponse& response);
/// Appends "?key=value" (first) or "&key=value", the value percent-encoded.
void append_query(std::string& target, bool& is_first, std::string_view key,
                  std::string_view value);
/// The JSON object of an answer body. Errors: Errc::bad_response (invalid JSON, or not an
/// object).
[[nodiscard]] queen::Result<nlohmann::json> object_answer(const HttpRequest& request,
                                                          std::string_view body);
/// The JSON array of an answer body: the body itself, or its member `key` when the body is an
/// object holding one (`key` null: only a bare array). Errors: Errc::bad_response.
[[nodiscard]] queen::Result<nlohmann::json> array_answer(const HttpRequest& request,
                                                         std::string_view body, const char* key);
/// A 2xx object that reports failure ({"success": false, "error": ...}) is Errc::rejected.
[[nodiscard]] queen::Status check_not_rejected(const HttpRequest& request,
                                               const nlohmann::json& body);
/// check_not_rejected() over the raw JSON text of an object, for the hot paths.
[[nodiscard]] queen::Status check_raw_not_rejected(const HttpRequest& request,
                                                   std::string_view object);
/// The JSON value of a body. Errors: Errc::bad_response (invalid JSON).
[[nodiscard]] queen::Result<std::string_view> scan_body(const HttpRequest& request,
                                                        std::string_view body);
/// The error of an answer a single-pass walk rejected: invalid JSON, or valid JSON of the wrong
/// shape (`why`); both Errc::bad_response.
[[nodiscard]] queen::Error walk_error(const HttpRequest& request, std::string_view body,
                                      const std::string& why);
/// Reads one ack result object at the cursor into `result`; false when it is not one.
bool read_ack_result(json::Cursor& cursor, AckResult& result);
/// Reads one ack result object from its raw JSON; false when it is not one.
bool parse_ack_result(std::string_view raw, AckResult& result);
/// Writes the members of one ack into the object `out` has open.
void write_ack_fields(json::Writer& out, const Ack& ack, bool is_group_included);
/// Writes the members of Ack::of(message, status) without building the Ack.
void write_message_ack_fields(json::Writer& out, const Message& message, AckStatus status);

/// How read_pop_object() found a pop answer.
enum class PopObjectRead { ok, malformed, no_messages, message_without_ids };
/// What is wrong with a pop answer read as `read` ("" for ok), for the error's text.
[[nodiscard]] const char* pop_object_problem(PopObjectRead read) noexcept;
/// Empties `result` to an answer of `queue` without messages (they go to its spares).
void clear_pop_result(std::string_view queue, PopResult& result);
/// Reads the pop answer object at `cursor` (GET /api/v1/pop's body, or a transaction answer's
/// "next") into `result` in one pass, reusing its storage: every member is overwritten, `queue`
/// when the answer names none. Leaves the cursor after the object. malformed: the cursor failed
/// (invalid JSON, or `why_bad` says what was misplaced); no_messages and message_without_ids:
/// valid JSON of the wrong shape. Messages take the answer's lease, group and partition when they
/// leave them out.
[[nodiscard]] PopObjectRead read_pop_object(json::Cursor& cursor, std::string_view queue,
                                            PopResult& result, std::string& why_bad);

/// Why a push item's delay cannot be sent (negative, or both delay_ms and visible_at_ms), or "".
[[nodiscard]] std::string push_delay_problem(const PushItem& item);
/// Why a timer.set cannot be sent (empty id or queue, negative times), or "". The payload's
/// JSON is checked by the caller.
[[nodiscard]] std::string timer_set_problem(const TimerSet& timer);
/// Writes bucket, key, value and (when set) expectedVersion and ttlMs of a kv.set.
void write_kv_set_fields(json::Writer& out, const KvSet& set);
/// Writes the members of a timer.set object (POST /api/v1/timers and the transaction's
/// operation): id, queue, partition, payload, transactionId, traceId, at | delayMs, intervalMs,
/// endAt, replace; optional ones only when set.
void write_timer_set_fields(json::Writer& out, const TimerSet& timer);

}  // namespace queen::client::detail
