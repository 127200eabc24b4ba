// engine/fuzz/command_fuzzer.cpp — libFuzzer target `engine_command`: decode arbitrary bytes as a
// command and as a result; whatever decodes in the current format must re-encode to the same
// bytes (canonical form), and what decodes in an older format (version 1 or 2) must re-encode to
// current bytes that are canonical in turn.
#include <cstddef>
#include <cstdint>

#include "queen/core/assert.hpp"
#include "queen/engine/command.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const queen::ByteSpan input(data, size);
    const bool is_legacy = size > 0 && data[0] < queen::engine::command_format_version;
    if (auto command = queen::engine::decode_command(input)) {
        const queen::Bytes again = queen::engine::encode_command(*command);
        if (is_legacy) {
            auto current = queen::engine::decode_command(again);
            QUEEN_ASSERT(current.has_value(), "a legacy command re-encodes to undecodable bytes");
            QUEEN_ASSERT(queen::engine::encode_command(*current) == again,
                         "a re-encoded legacy command is not canonical");
        } else {
            QUEEN_ASSERT(again.size() == size, "command re-encodes to another size");
            QUEEN_ASSERT(std::equal(again.begin(), again.end(), data), "command is not canonical");
        }
    }
    if (auto result = queen::engine::decode_result(input)) {
        const queen::Bytes again = queen::engine::encode_result(*result);
        if (is_legacy) {
            QUEEN_ASSERT(queen::engine::decode_result(again).has_value(),
                         "a legacy result re-encodes to undecodable bytes");
        } else {
            QUEEN_ASSERT(again.size() == size, "result re-encodes to another size");
        }
    }
    return 0;
}
