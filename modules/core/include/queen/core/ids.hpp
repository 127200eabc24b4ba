// queen/core/ids.hpp — strong integer types for terms, indexes, node ids and other identifiers.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>

namespace queen {

/// An integer that only compares with and converts to itself (redpanda named_type). Arithmetic is
/// explicit: `LogIndex{i.value() + 1}` or next().
template <class Tag, class Rep>
class StrongInt {
public:
    using rep = Rep;
    constexpr StrongInt() noexcept = default;
    constexpr explicit StrongInt(Rep value) noexcept : value_(value) {}
    [[nodiscard]] constexpr Rep value() const noexcept { return value_; }
    [[nodiscard]] constexpr StrongInt next() const noexcept {
        return StrongInt{static_cast<Rep>(value_ + 1)};
    }
    [[nodiscard]] constexpr StrongInt prev() const noexcept {
        return StrongInt{static_cast<Rep>(value_ - 1)};
    }
    friend constexpr auto operator<=>(StrongInt, StrongInt) noexcept = default;
    friend std::ostream& operator<<(std::ostream& out, StrongInt id) { return out << +id.value_; }

private:
    Rep value_{};
};

using Term = StrongInt<struct TermTag, std::uint64_t>;
using LogIndex = StrongInt<struct LogIndexTag, std::uint64_t>;
using NodeId = StrongInt<struct NodeIdTag, std::uint64_t>;
using FencingToken = StrongInt<struct FencingTokenTag, std::uint64_t>;
using SequenceNumber = StrongInt<struct SequenceNumberTag, std::uint64_t>;

/// Milliseconds since the Unix epoch, as stamped on log entries by the leader (docs/architecture.md
/// section 3).
using TimestampMs = StrongInt<struct TimestampMsTag, std::int64_t>;

}  // namespace queen

template <class Tag, class Rep>
struct std::hash<queen::StrongInt<Tag, Rep>> {
    std::size_t operator()(queen::StrongInt<Tag, Rep> id) const noexcept {
        return std::hash<Rep>{}(id.value());
    }
};
