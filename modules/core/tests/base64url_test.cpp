// core/tests/base64url_test.cpp — base64url: RFC 4648 vectors, round trips of random bytes,
// refusals.
#include "queen/core/base64url.hpp"

#include "queen/core/rng.hpp"
#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace queen {
namespace {

TEST_CASE("core: base64url encodes the RFC 4648 vectors and decodes them back", "[base64url]") {
    const std::pair<std::string, std::string> vectors[] = {
        {"", ""},           {"f", "Zg"},          {"fo", "Zm8"},          {"foo", "Zm9v"},
        {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"}, {"\xfb\xff", "-_8"},
    };
    for (const auto& [bytes, text] : vectors) {
        CHECK(base64url_encode(bytes) == text);
        CHECK(base64url_decode(text) == bytes);
    }
    CHECK(base64url_decode("Zm8=") == "fo");  // padding is accepted
}

TEST_CASE("core: base64url round-trips random bytes and refuses what no encoding gives",
          "[base64url]") {
    const auto seed = testing::seed_from_env();
    INFO("seed=" << seed << " (rerun with QUEEN_SEED=" << seed << ")");
    Rng rng(seed);
    for (int i = 0; i < 2000; ++i) {
        std::string bytes(rng.below(64), '\0');
        for (char& c : bytes) {
            c = static_cast<char>(rng.below(256));
        }
        CHECK(base64url_decode(base64url_encode(bytes)) == bytes);
    }
    CHECK_FALSE(base64url_decode("Zm9v+").has_value());  // '+' is base64, not base64url
    CHECK_FALSE(base64url_decode("Z").has_value());      // one character left over
    CHECK_FALSE(base64url_decode("Zm 9").has_value());
}

}  // namespace
}  // namespace queen
