// queen/testing/support.hpp — helpers every test uses: seeds from QUEEN_SEED, temp dirs, assert
// capture.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "queen/core/assert.hpp"

namespace queen::testing {

/// The seed for a randomized test: QUEEN_SEED when set, otherwise a fresh random one. Always
/// print it (INFO) so a failure can be replayed with QUEEN_SEED=<seed>.
std::uint64_t seed_from_env();

/// An integer from the environment, or `fallback` when unset or malformed.
std::int64_t env_int(const char* name, std::int64_t fallback);

/// A fresh directory under $TMPDIR (or /tmp; on disk, not tmpfs, when QUEEN_TEST_DIR is set),
/// removed with its contents on destruction unless QUEEN_KEEP_TEST_DIRS is set.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

private:
    std::filesystem::path path_;
};

/// Thrown by the handler that AssertCapture installs.
struct AssertionFired : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// While alive, a failing QUEEN_ASSERT throws AssertionFired instead of aborting.
class AssertCapture {
public:
    AssertCapture();
    ~AssertCapture();
    AssertCapture(const AssertCapture&) = delete;
    AssertCapture& operator=(const AssertCapture&) = delete;

private:
    AssertHandler previous_;
};

/// The directory holding the built binaries (QUEEN_BUILD_DIR, set by ctest), for tests that
/// start `queen` or helper processes.
std::filesystem::path build_dir();

}  // namespace queen::testing
