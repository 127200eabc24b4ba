// modules/node/tests/encryption_key_test.cpp — the payload key: created once in the data
// directory, read back, refused (never replaced) when its file is unsafe or malformed, and chosen
// by precedence.
#include "encryption_key.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace {
namespace fs = std::filesystem;
using queen::Errc;
using queen::node::detail::load_or_create_key_file;
using queen::node::detail::read_key_file;
using queen::node::detail::resolve_encryption_key;

const std::string key_a = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
const std::string key_b = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

/// Hands out 0, 1, 2, ... and counts the bytes drawn.
class CountingRandom final : public queen::api::RandomSource {
public:
    void fill(std::uint8_t* data, std::size_t size) override {
        for (std::size_t i = 0; i < size; ++i) {
            data[i] = static_cast<std::uint8_t>(drawn_++);
        }
    }
    [[nodiscard]] std::size_t drawn() const { return drawn_; }

private:
    std::size_t drawn_ = 0;
};

void write_file(const fs::path& path, const std::string& text, mode_t mode) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    REQUIRE(::chmod(path.c_str(), mode) == 0);
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

mode_t file_mode(const fs::path& path) {
    struct stat status {};
    REQUIRE(::stat(path.c_str(), &status) == 0);
    return status.st_mode & 07777;
}
}  // namespace

TEST_CASE("node: the data directory key file is created once, mode 0600, then read back",
          "[node][encryption]") {
    queen::testing::TempDir dir;
    const auto path = dir.path() / "keys" / "payload.key";
    CountingRandom random;
    auto created = load_or_create_key_file(path, random);
    REQUIRE(created.has_value());
    CHECK(created->is_created);
    CHECK(created->hex == key_a);  // the 32 bytes drawn, as hex
    CHECK(random.drawn() == 32);
    CHECK(read_file(path) == key_a + "\n");
    CHECK(file_mode(path) == 0600);
    CHECK(file_mode(path.parent_path()) == 0700);
    CHECK_FALSE(fs::exists(path.string() + ".tmp"));

    auto again = load_or_create_key_file(path, random);
    REQUIRE(again.has_value());
    CHECK_FALSE(again->is_created);
    CHECK(again->hex == key_a);
    CHECK(random.drawn() == 32);  // nothing drawn: the file was read
}

TEST_CASE("node: a key file that group or others may access is refused and never replaced",
          "[node][encryption]") {
    queen::testing::TempDir dir;
    const auto path = dir.path() / "payload.key";
    CountingRandom random;
    for (const mode_t mode : {0640, 0604, 0644, 0660, 0602}) {
        INFO("mode " << std::oct << mode);
        write_file(path, key_b + "\n", mode);
        const auto read = read_key_file(path);
        REQUIRE_FALSE(read.has_value());
        CHECK(read.error().is(Errc::invalid_argument));
        CHECK_THAT(read.error().message(), Catch::Contains(path.string()) &&
                                               Catch::Contains("group or others") &&
                                               Catch::Contains("chmod 600"));
        CHECK_THAT(read.error().message(), !Catch::Contains(key_b));
        const auto loaded = load_or_create_key_file(path, random);
        REQUIRE_FALSE(loaded.has_value());
        CHECK(loaded.error().is(Errc::invalid_argument));
        CHECK(read_file(path) == key_b + "\n");
        CHECK(random.drawn() == 0);
    }
    write_file(path, key_b + "\n", 0400);  // read-only for the owner is fine
    CHECK(read_key_file(path).value() == key_b);
}

TEST_CASE("node: a key file that is not 64 hex digits is refused and never replaced",
          "[node][encryption]") {
    queen::testing::TempDir dir;
    const auto path = dir.path() / "payload.key";
    CountingRandom random;
    struct Case {
        std::string text;
        std::string complaint;
    };
    const std::string not_hex = "zz" + key_b.substr(2);
    for (const auto& bad :
         {Case{"", "found 0 characters"}, Case{key_b.substr(0, 63) + "\n", "found 63 characters"},
          Case{key_b + "0\n", "found 65 characters"},
          Case{key_b + "\n" + key_b + "\n", "found 129 characters"},
          Case{" " + key_b, "found 65 characters"}, Case{not_hex + "\n", "not a hex digit"},
          Case{std::string(5000, 'a'), "5000 bytes"}}) {
        INFO("content \"" << bad.text << "\"");
        write_file(path, bad.text, 0600);
        const auto read = read_key_file(path);
        REQUIRE_FALSE(read.has_value());
        CHECK(read.error().is(Errc::invalid_argument));
        CHECK_THAT(read.error().message(),
                   Catch::Contains(path.string()) && Catch::Contains(bad.complaint));
        CHECK_THAT(read.error().message(), !Catch::Contains(not_hex.substr(0, 8)));
        const auto loaded = load_or_create_key_file(path, random);
        REQUIRE_FALSE(loaded.has_value());
        CHECK(read_file(path) == bad.text);
    }
    CHECK(random.drawn() == 0);

    // Trailing whitespace (a newline, CRLF) is ignored and upper-case digits are hex digits.
    write_file(path, key_b, 0600);
    CHECK(read_key_file(path).value() == key_b);
    write_file(path, key_b + "\r\n", 0600);
    CHECK(read_key_file(path).value() == key_b);
    std::string upper = key_b;
    for (auto& c : upper) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    write_file(path, upper + "\n", 0600);
    CHECK(read_key_file(path).value() == upper);

    const auto directory = dir.path() / "a-directory";
    fs::create_directory(directory);
    REQUIRE(::chmod(directory.c_str(), 0700) == 0);
    const auto not_regular = load_or_create_key_file(directory, random);
    REQUIRE_FALSE(not_regular.has_value());
    CHECK_THAT(not_regular.error().message(), Catch::Contains("not a regular file"));
    CHECK(read_key_file(dir.path() / "absent.key").error().is(Errc::not_found));
}

TEST_CASE(
    "node: the key comes from the environment, the setting, the key file, then the data "
    "directory",
    "[node][encryption]") {
    queen::testing::TempDir dir;
    queen::node::NodeConfig config;
    config.node.data_dir = dir.path() / "data";
    fs::create_directories(config.node.data_dir);
    const auto data_dir_key = config.node.data_dir / "keys" / "payload.key";
    const auto shared_key = dir.path() / "shared.key";
    write_file(shared_key, key_b + "\n", 0600);
    CountingRandom random;

    config.encryption_key_hex = key_b;
    config.encryption_key_file = shared_key;
    auto key = resolve_encryption_key(config, key_a, random);
    REQUIRE(key.has_value());
    CHECK(key->hex == key_a);
    CHECK(key->source == "QUEEN_ENCRYPTION_KEY");

    config.encryption_key_hex = key_a;
    key = resolve_encryption_key(config, "", random);
    REQUIRE(key.has_value());
    CHECK(key->hex == key_a);
    CHECK(key->source == "security.encryption_key");

    config.encryption_key_hex.clear();
    key = resolve_encryption_key(config, "", random);
    REQUIRE(key.has_value());
    CHECK(key->hex == key_b);
    CHECK(key->source == "security.encryption_key_file");
    CHECK(key->path == shared_key);
    CHECK_FALSE(fs::exists(data_dir_key));  // a supplied key creates nothing

    config.encryption_key_file.clear();
    key = resolve_encryption_key(config, "", random);
    REQUIRE(key.has_value());
    CHECK(key->source == "data_dir");
    CHECK(key->path == data_dir_key);
    CHECK(key->is_created);
    CHECK(key->hex == key_a);  // CountingRandom's bytes
    key = resolve_encryption_key(config, "", random);
    REQUIRE(key.has_value());
    CHECK_FALSE(key->is_created);
    CHECK(key->hex == key_a);
    CHECK(random.drawn() == 32);

    // Malformed keys name where they came from.
    auto bad = resolve_encryption_key(config, "abc", random);
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error().message(), Catch::Contains("QUEEN_ENCRYPTION_KEY"));
    config.encryption_key_hex = "abc";
    bad = resolve_encryption_key(config, "", random);
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error().message(), Catch::Contains("security.encryption_key"));
    CHECK_FALSE(config.validate().has_value());
}

TEST_CASE("node: a key file named in the settings must exist and is never created",
          "[node][encryption]") {
    queen::testing::TempDir dir;
    queen::node::NodeConfig config;
    config.node.data_dir = dir.path();
    config.encryption_key_file = dir.path() / "missing.key";
    CountingRandom random;
    const auto key = resolve_encryption_key(config, "", random);
    REQUIRE_FALSE(key.has_value());
    CHECK(key.error().is(Errc::not_found));
    CHECK_THAT(key.error().message(),
               Catch::Contains("security.encryption_key_file") && Catch::Contains("missing.key"));
    CHECK_FALSE(fs::exists(config.encryption_key_file));
    CHECK_FALSE(fs::exists(dir.path() / "keys"));
    CHECK(random.drawn() == 0);

    write_file(config.encryption_key_file, key_b + "\n", 0644);
    const auto unsafe = resolve_encryption_key(config, "", random);
    REQUIRE_FALSE(unsafe.has_value());
    CHECK_THAT(unsafe.error().message(),
               Catch::Contains("security.encryption_key_file") && Catch::Contains("chmod 600"));
}

TEST_CASE("node: with payload encryption off there is no key and none may be given",
          "[node][encryption]") {
    queen::testing::TempDir dir;
    queen::node::NodeConfig config;
    config.node.data_dir = dir.path();
    config.is_payload_encryption_enabled = false;
    CHECK(config.validate().has_value());
    CountingRandom random;
    const auto key = resolve_encryption_key(config, "", random);
    REQUIRE(key.has_value());
    CHECK(key->hex.empty());
    CHECK(key->source == "disabled");
    CHECK_FALSE(fs::exists(dir.path() / "keys"));

    const auto from_environment = resolve_encryption_key(config, key_a, random);
    REQUIRE_FALSE(from_environment.has_value());
    CHECK_THAT(from_environment.error().message(),
               Catch::Contains("QUEEN_ENCRYPTION_KEY") &&
                   Catch::Contains("security.payload_encryption = false"));

    config.encryption_key_hex = key_a;
    CHECK_THAT(config.validate().error().message(),
               Catch::Contains("security.payload_encryption = false"));
    config.encryption_key_hex.clear();
    config.encryption_key_file = dir.path() / "shared.key";
    CHECK_FALSE(config.validate().has_value());
}
