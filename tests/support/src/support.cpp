// tests/support/src/support.cpp — seeds, temp dirs and assertion capture for tests.
#include "queen/testing/support.hpp"

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "queen/core/rng.hpp"

namespace queen::testing {

std::uint64_t seed_from_env() {
    if (const char* text = std::getenv("QUEEN_SEED"); text != nullptr && *text != '\0') {
        return std::strtoull(text, nullptr, 0);
    }
    return random_seed();
}

std::int64_t env_int(const char* name, std::int64_t fallback) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') {
        return fallback;
    }
    char* end = nullptr;
    const long long value = std::strtoll(text, &end, 0);
    return (end != nullptr && *end == '\0') ? value : fallback;
}

TempDir::TempDir() {
    const char* base = std::getenv("QUEEN_TEST_DIR");
    if (base == nullptr) {
        base = std::getenv("TMPDIR");
    }
    std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/queen-test-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw std::runtime_error("mkdtemp failed for " + pattern);
    }
    path_ = pattern;
}

TempDir::~TempDir() {
    if (std::getenv("QUEEN_KEEP_TEST_DIRS") == nullptr) {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
}

namespace {
void throwing_handler(const AssertionInfo& info) {
    throw AssertionFired(std::string(info.expression) + ": " + info.message);
}
}  // namespace

AssertCapture::AssertCapture() : previous_(set_assert_handler(&throwing_handler)) {}
AssertCapture::~AssertCapture() {
    set_assert_handler(previous_);
}

std::filesystem::path build_dir() {
    if (const char* dir = std::getenv("QUEEN_BUILD_DIR"); dir != nullptr) {
        return dir;
    }
    return std::filesystem::current_path();
}

}  // namespace queen::testing
