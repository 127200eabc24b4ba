// modules/core/tests/chunked_array_test.cpp — ChunkedArray against std::vector under a seeded
// random mix of resizes, assigns and writes, and element addresses that stay put while it grows.
#include "queen/core/chunked_array.hpp"

#include <cstdint>
#include <vector>

#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace {

struct Element {
    std::uint64_t a = 0;
    std::uint32_t b = 0;
    bool operator==(const Element&) const = default;
};

}  // namespace

TEST_CASE("core: ChunkedArray behaves like std::vector for resize, assign and indexing",
          "[core][chunked_array]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    queen::Rng rng(seed);
    queen::ChunkedArray<Element, 4> chunked;  // 16 per chunk: many chunk edges
    std::vector<Element> model;
    for (int step = 0; step < 2'000; ++step) {
        const std::uint64_t op = rng.below(10);
        if (op < 4) {
            const std::size_t count = rng.below(200);
            chunked.resize(count);
            model.resize(count);
        } else if (op == 4) {
            const std::size_t count = rng.below(100);
            const Element value{rng.next(), static_cast<std::uint32_t>(rng.next())};
            chunked.assign(count, value);
            model.assign(count, value);
        } else if (!model.empty()) {
            const std::size_t index = rng.below(model.size());
            const Element value{rng.next(), static_cast<std::uint32_t>(step)};
            chunked[index] = value;
            model[index] = value;
        }
        REQUIRE(chunked.size() == model.size());
        REQUIRE(chunked.capacity() >= chunked.size());
        REQUIRE(chunked.capacity() < chunked.size() + 16);  // no chunk past the last element
        for (std::size_t i = 0; i < model.size(); ++i) {
            REQUIRE(chunked[i] == model[i]);  // regrown elements are value-initialized again
        }
    }
}

TEST_CASE("core: ChunkedArray elements never move while it grows", "[core][chunked_array]") {
    queen::ChunkedArray<Element, 10> chunked(3);
    chunked[0].a = 7;
    chunked[2].a = 9;
    const Element* first = &chunked[0];
    const Element* third = &chunked[2];
    chunked.resize(1'000'000);
    CHECK(&chunked[0] == first);
    CHECK(&chunked[2] == third);
    CHECK(chunked[0].a == 7);
    CHECK(chunked[2].a == 9);
    CHECK(chunked[999'999] == Element{});
    CHECK(chunked.capacity() == 1'000'448);  // 977 chunks of 1,024
    chunked.resize(0);
    CHECK(chunked.empty());
    CHECK(chunked.capacity() == 0);
}
