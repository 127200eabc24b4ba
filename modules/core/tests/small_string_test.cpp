// modules/core/tests/small_string_test.cpp — SmallString against std::string under a seeded random
// mix of assignments, copies, moves and clears across the inline/heap edge; where text lives.
#include "queen/core/small_string.hpp"

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace {

std::string random_text(queen::Rng& rng) {
    // Lengths around the inline capacity (39) and well past it.
    const std::size_t size = rng.below(4) == 0 ? rng.below(120) : rng.below(45);
    std::string out;
    for (std::size_t i = 0; i < size; ++i) {
        out += static_cast<char>('a' + rng.below(26));
    }
    return out;
}

void check_same(const queen::SmallString& small, const std::string& model) {
    REQUIRE(small.size() == model.size());
    REQUIRE(small.view() == model);
    REQUIRE(small.str() == model);
    REQUIRE(small.c_str()[small.size()] == '\0');
    REQUIRE(small.empty() == model.empty());
    REQUIRE(small.is_inline() == (small.capacity() == queen::SmallString::inline_capacity));
}

}  // namespace

TEST_CASE("core: SmallString behaves like std::string across the inline edge",
          "[core][small_string]") {
    const std::uint64_t seed = queen::testing::seed_from_env();
    INFO("QUEEN_SEED=" << seed);
    queen::Rng rng(seed);
    std::vector<queen::SmallString> smalls(8);
    std::vector<std::string> models(8);
    for (int step = 0; step < 20'000; ++step) {
        const std::size_t a = rng.below(smalls.size());
        const std::size_t b = rng.below(smalls.size());
        switch (rng.below(7)) {
            case 0: {
                const std::string text = random_text(rng);
                smalls[a] = text;
                models[a] = text;
                break;
            }
            case 1:
                smalls[a] = smalls[b];  // includes self-assignment
                models[a] = models[b];
                break;
            case 2:
                if (a != b) {
                    smalls[a] = std::move(smalls[b]);
                    models[a] = std::move(models[b]);
                    models[b].clear();  // a moved-from SmallString is empty
                    check_same(smalls[b], models[b]);
                }
                break;
            case 3:
                smalls[a].clear();
                models[a].clear();
                break;
            case 4: {
                queen::SmallString copy(smalls[a]);
                check_same(copy, models[a]);
                queen::SmallString moved(std::move(copy));
                check_same(moved, models[a]);
                check_same(copy, std::string{});
                break;
            }
            case 5: {
                // Assigning a part of itself (overlapping text) keeps the right bytes.
                const std::size_t from = models[a].empty() ? 0 : rng.below(models[a].size());
                smalls[a].assign(smalls[a].view().substr(from));
                models[a] = models[a].substr(from);
                break;
            }
            default:
                REQUIRE((smalls[a] == smalls[b]) == (models[a] == models[b]));
                REQUIRE((smalls[a] < smalls[b]) == (models[a] < models[b]));
                break;
        }
        check_same(smalls[a], models[a]);
    }
}

TEST_CASE("core: SmallString keeps a UUID inline and longer text on the heap",
          "[core][small_string]") {
    const queen::SmallString uuid("0190a5b2-7c3d-7e4f-8a1b-2c3d4e5f6a7b");
    CHECK(uuid.size() == 36);
    CHECK(uuid.is_inline());
    const std::string long_text(queen::SmallString::inline_capacity + 1, 'x');
    queen::SmallString text(long_text);
    CHECK_FALSE(text.is_inline());
    CHECK(text == long_text);
    // A heap buffer is kept for shorter text (no allocation on reuse).
    text = "short";
    CHECK_FALSE(text.is_inline());
    CHECK(text == "short");
    CHECK("id: " + uuid == "id: 0190a5b2-7c3d-7e4f-8a1b-2c3d4e5f6a7b");
    CHECK(std::string("x") + queen::SmallString("y") == "xy");
    std::unordered_set<queen::SmallString> set{uuid, text, uuid};
    CHECK(set.size() == 2);
    CHECK(set.count(queen::SmallString("short")) == 1);
}
