// tools/json_read_bench/bodies.hpp — the request and answer bodies json_read_bench reads:
// pushes, an ack batch, a transaction and pop answers as the clients and the server write them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace queen::json_eval {

/// A ~256-byte order as an application pushes it: nested object, array of objects, strings,
/// integers, decimals, a boolean and a null. `spaced`: written with ": " and ", " (Python's
/// json.dumps default), so the reader has whitespace to remove.
[[nodiscard]] std::string order_payload(std::uint64_t sequence, bool spaced);
/// The payload the Queen bench pushes (flat: two integers and a padding string), 256 bytes.
[[nodiscard]] std::string bench_payload(std::uint64_t sequence);

/// A body with at least 64 readable bytes after its end (spaces), as simdjson needs.
[[nodiscard]] std::string padded(std::string text);

enum class BodyKind { push, ack_batch, transaction, pop_answer };

struct Body {
    std::string name;
    BodyKind kind = BodyKind::push;
    std::string text;  ///< padded()
};

/// Every body of the measurement, in report order.
[[nodiscard]] std::vector<Body> make_bodies();

/// A push of one item around `payload` (any text, valid JSON or not).
[[nodiscard]] std::string push_one(const std::string& payload);
/// An ack batch of two acknowledgments (the mutation target for acks).
[[nodiscard]] std::string ack_two();
/// A pop answer of three messages (the mutation target for pop answers).
[[nodiscard]] std::string pop_three();

}  // namespace queen::json_eval
