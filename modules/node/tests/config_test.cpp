// modules/node/tests/config_test.cpp — the node's settings: safe defaults, the CORS origin list,
// and clear errors for keys that were removed.
#include "queen/node/config.hpp"

#include "queen/testing/catch.hpp"

using queen::node::NodeConfig;

TEST_CASE("node: the default config listens on loopback and allows no web origin",
          "[node][config]") {
    NodeConfig config;
    queen::config::Schema schema;
    queen::node::bind_config(schema, config);
    CHECK(config.http.bind_address == "127.0.0.1");
    CHECK(config.http.cors.allowed_origins.empty());
    const std::string rendered = schema.render();
    CHECK(rendered.find("address = \"127.0.0.1\"") != std::string::npos);
    CHECK(rendered.find("cors_allowed_origins = []") != std::string::npos);
    CHECK(config.validate().has_value());
}

TEST_CASE("node: http.address and http.cors_allowed_origins load from a file and from --set",
          "[node][config]") {
    NodeConfig config;
    queen::config::Schema schema;
    queen::node::bind_config(schema, config);
    REQUIRE(schema
                .load_string("[http]\naddress = \"0.0.0.0\"\n"
                             "cors_allowed_origins = [\"http://localhost:3000\"]\n",
                             "q.toml")
                .has_value());
    CHECK(config.http.bind_address == "0.0.0.0");
    CHECK(config.http.cors.allowed_origins == std::vector<std::string>{"http://localhost:3000"});
    CHECK(config.validate().has_value());
    REQUIRE(schema.set("http.cors_allowed_origins", "http://a.example,https://b.example:8443")
                .has_value());
    CHECK(config.http.cors.allowed_origins ==
          std::vector<std::string>{"http://a.example", "https://b.example:8443"});
    REQUIRE(schema.set("http.cors_allowed_origins", "").has_value());
    CHECK(config.http.cors.allowed_origins.empty());

    // A malformed origin is refused by name.
    REQUIRE(schema.set("http.cors_allowed_origins", "http://localhost:3000/").has_value());
    auto invalid = config.validate();
    REQUIRE_FALSE(invalid.has_value());
    CHECK(invalid.error().message().find("http.cors_allowed_origins") != std::string::npos);
}

TEST_CASE("node: the removed CORS keys are errors that name their replacement", "[node][config]") {
    for (const char* key : {"cors_enabled = true", "cors_allow_origin = \"*\""}) {
        INFO(key);
        NodeConfig config;
        queen::config::Schema schema;
        queen::node::bind_config(schema, config);
        auto loaded = schema.load_string(std::string("[http]\n") + key + "\n", "old.toml");
        REQUIRE_FALSE(loaded.has_value());
        CHECK(loaded.error().is(queen::config::Errc::unknown_key));
        const std::string message = loaded.error().message();
        CHECK(message.find("old.toml: http.cors_") != std::string::npos);
        CHECK(message.find("no longer a setting") != std::string::npos);
        CHECK(message.find("http.cors_allowed_origins") != std::string::npos);
    }
}
