// engine/fuzz/command_fuzzer.cpp — libFuzzer target `engine_command`: decode arbitrary bytes as a
// command and as a result; whatever decodes must re-encode to the same bytes (canonical form).
#include <cstddef>
#include <cstdint>

#include "queen/core/assert.hpp"
#include "queen/engine/command.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const queen::ByteSpan input(data, size);
    if (auto command = queen::engine::decode_command(input)) {
        const queen::Bytes again = queen::engine::encode_command(*command);
        QUEEN_ASSERT(again.size() == size, "command re-encodes to another size");
        QUEEN_ASSERT(std::equal(again.begin(), again.end(), data), "command is not canonical");
    }
    if (auto result = queen::engine::decode_result(input)) {
        const queen::Bytes again = queen::engine::encode_result(*result);
        QUEEN_ASSERT(again.size() == size, "result re-encodes to another size");
    }
    return 0;
}
