// modules/config/tests/schema_test.cpp — loading, overrides, errors naming the key path, rendering.
#include "queen/config/schema.hpp"

#include <fstream>

#include "queen/testing/catch.hpp"
#include "queen/testing/support.hpp"

namespace {
enum class Mode { durable, fast };
struct Settings {
    std::uint16_t port = 6632;
    bool verbose = false;
    double ratio = 0.5;
    std::string name = "queen";
    std::vector<std::string> peers;
    Mode mode = Mode::durable;
};
void bind(queen::config::Schema& schema, Settings& s) {
    schema.add_section("http", "HTTP listener");
    schema.add_integer("http.port", &s.port, "TCP port", 1, 65535);
    schema.add_bool("verbose", &s.verbose, "chatty");
    schema.add_double("tuning.ratio", &s.ratio, "a ratio");
    schema.add_string("node.name", &s.name, "node name");
    schema.add_string_list("cluster.peers", &s.peers, "peers");
    schema.add_enum("store.mode", &s.mode, {{"durable", Mode::durable}, {"fast", Mode::fast}},
                    "sync mode");
}
}  // namespace

TEST_CASE("config: a file sets every kind of key", "[config]") {
    Settings s;
    queen::config::Schema schema;
    bind(schema, s);
    auto status = schema.load_string(R"(
verbose = true
[http]
port = 8080
[tuning]
ratio = 2
[node]
name = "n1"
[cluster]
peers = ["a:1", "b:2"]
[store]
mode = "fast"
)",
                                     "test.toml");
    REQUIRE(status.has_value());
    CHECK(s.port == 8080);
    CHECK(s.verbose);
    CHECK(s.ratio == 2.0);
    CHECK(s.name == "n1");
    CHECK(s.peers == std::vector<std::string>{"a:1", "b:2"});
    CHECK(s.mode == Mode::fast);
}

TEST_CASE("config: unknown keys, wrong types and bad values name the full key path", "[config]") {
    Settings s;
    queen::config::Schema schema;
    bind(schema, s);
    auto unknown = schema.load_string("[http]\nprot = 1\n", "f.toml");
    REQUIRE_FALSE(unknown);
    CHECK(unknown.error().is(queen::config::Errc::unknown_key));
    CHECK(unknown.error().context == "f.toml: http.prot");
    auto unknown_table = schema.load_string("[htp]\nport = 1\n", "f.toml");
    REQUIRE_FALSE(unknown_table);
    CHECK(unknown_table.error().context == "f.toml: htp");
    auto wrong = schema.load_string("[http]\nport = \"80\"\n", "f.toml");
    REQUIRE_FALSE(wrong);
    CHECK(wrong.error().is(queen::config::Errc::wrong_type));
    CHECK(wrong.error().context.find("http.port must be an integer, not string") !=
          std::string::npos);
    auto range = schema.load_string("[http]\nport = 70000\n", "f.toml");
    REQUIRE_FALSE(range);
    CHECK(range.error().is(queen::config::Errc::out_of_range));
    auto bad_enum = schema.load_string("[store]\nmode = \"slow\"\n", "f.toml");
    REQUIRE_FALSE(bad_enum);
    CHECK(bad_enum.error().context.find("durable, fast") != std::string::npos);
    auto syntax = schema.load_string("[http\n", "f.toml");
    REQUIRE_FALSE(syntax);
    CHECK(syntax.error().is(queen::config::Errc::syntax));
    CHECK(syntax.error().context.rfind("f.toml:1:", 0) == 0);
    CHECK(s.port == 6632);  // nothing applied from the failed loads' bad keys
}

TEST_CASE("config: a removed key is refused with what replaced it, in files and overrides",
          "[config]") {
    Settings s;
    queen::config::Schema schema;
    bind(schema, s);
    schema.add_removed("http.cors_enabled", "use http.cors_allowed_origins");
    schema.add_removed("old.flag", "it has no replacement");
    auto in_file = schema.load_string("[http]\nport = 80\ncors_enabled = true\n", "f.toml");
    REQUIRE_FALSE(in_file);
    CHECK(in_file.error().is(queen::config::Errc::unknown_key));
    CHECK(in_file.error().context ==
          "f.toml: http.cors_enabled is no longer a setting: use http.cors_allowed_origins");
    // A table that holds removed keys only still reaches the key.
    auto old_table = schema.load_string("[old]\nflag = 1\n", "f.toml");
    REQUIRE_FALSE(old_table);
    CHECK(old_table.error().context ==
          "f.toml: old.flag is no longer a setting: it has no "
          "replacement");
    auto override = schema.set("http.cors_enabled", "false");
    REQUIRE_FALSE(override);
    CHECK(override.error().is(queen::config::Errc::unknown_key));
    CHECK(override.error().context ==
          "http.cors_enabled is no longer a setting: use http.cors_allowed_origins");
    // Other unknown keys keep the plain message.
    CHECK(schema.set("http.cors", "1").error().context == "http.cors");
}

TEST_CASE("config: command-line overrides parse by type", "[config]") {
    Settings s;
    queen::config::Schema schema;
    bind(schema, s);
    REQUIRE(schema.set("http.port", "9000").has_value());
    CHECK(s.port == 9000);
    REQUIRE(schema.set("cluster.peers", "x,y").has_value());
    CHECK(s.peers.size() == 2);
    CHECK_FALSE(schema.set("http.port", "90a").has_value());
    CHECK_FALSE(schema.set("verbose", "yes").has_value());
    CHECK(schema.set("nope", "1").error().is(queen::config::Errc::unknown_key));
}

TEST_CASE("config: the rendered config loads back to the same values", "[config]") {
    Settings s;
    s.port = 1234;
    s.peers = {"p:1"};
    s.mode = Mode::fast;
    s.name = "with \"quotes\"";
    queen::config::Schema schema;
    bind(schema, s);
    const std::string text = schema.render();
    CHECK(text.find("# HTTP listener\n[http]\n# TCP port\nport = 1234\n") != std::string::npos);
    Settings copy;
    queen::config::Schema reload;
    bind(reload, copy);
    REQUIRE(reload.load_string(text, "rendered").has_value());
    CHECK(copy.port == 1234);
    CHECK(copy.peers == s.peers);
    CHECK(copy.mode == Mode::fast);
    CHECK(copy.name == s.name);
    CHECK(copy.ratio == s.ratio);
}

TEST_CASE("config: a missing file is an io error naming it", "[config]") {
    Settings s;
    queen::config::Schema schema;
    bind(schema, s);
    auto status = schema.load_file("/nonexistent/queen.toml");
    REQUIRE_FALSE(status);
    CHECK(status.error().is(queen::config::Errc::io));
    CHECK(status.error().context == "/nonexistent/queen.toml");
}

TEST_CASE("config: a secret is never rendered, and an empty one shows as empty", "[config]") {
    std::string token;
    queen::config::Schema schema;
    schema.add_section("auth", "Secrets");
    schema.add_secret("auth.token", &token, "The token");
    CHECK(schema.render().find("token = \"\"\n") != std::string::npos);
    REQUIRE(schema.set("auth.token", "s3cr3t-value").has_value());
    CHECK(token == "s3cr3t-value");
    const std::string text = schema.render();
    CHECK(text.find("s3cr3t-value") == std::string::npos);
    CHECK(text.find("token = \"<hidden>\"\n") != std::string::npos);
}
