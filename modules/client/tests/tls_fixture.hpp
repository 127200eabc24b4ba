// client/tests/tls_fixture.hpp — what the TLS tests share: a fresh test CA with its certificates in
// a temporary directory, the TLS test server's settings, and client options that trust the CA.
#pragma once

#include <cstdint>
#include <string>

#include "queen/client/connection.hpp"
#include "queen/testing/support.hpp"
#include "queen/testing/test_ca.hpp"
#include "test_server.hpp"

namespace queen::client::testing {

/// https://127.0.0.1:`port`.
inline Endpoint tls_local(std::uint16_t port) {
    return Endpoint{"127.0.0.1", port, true};
}

struct TlsFixture {
    explicit TlsFixture(const queen::testing::TestCertificateOptions& certificate_options = {})
        : certificates(queen::testing::make_test_certificates(dir.path(), certificate_options)) {}

    /// The server's certificate for localhost / 127.0.0.1; `is_client_certificate_required`:
    /// clients must show one signed by the test CA.
    [[nodiscard]] TestServerTls server(bool is_client_certificate_required = false) const {
        TestServerTls tls;
        tls.certificate_file = certificates.server_certificate_file.string();
        tls.key_file = certificates.server_key_file.string();
        if (is_client_certificate_required) {
            tls.client_ca_file = certificates.ca_file.string();
        }
        return tls;
    }

    /// Options that trust the test CA (and nothing else).
    [[nodiscard]] ConnectionOptions client() const {
        ConnectionOptions options;
        options.tls.ca_file = certificates.ca_file.string();
        return options;
    }

    /// client() with the test client certificate.
    [[nodiscard]] ConnectionOptions client_with_certificate() const {
        ConnectionOptions options = client();
        options.tls.certificate_file = certificates.client_certificate_file.string();
        options.tls.key_file = certificates.client_key_file.string();
        return options;
    }

    queen::testing::TempDir dir;
    queen::testing::TestCertificates certificates;
};

}  // namespace queen::client::testing
