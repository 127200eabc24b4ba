// queen/testing/test_ca.hpp — a throw-away certificate authority for TLS tests: a CA, a server
// certificate for localhost and a client certificate signed by it, written as PEM files.
#pragma once

#include <filesystem>
#include <string>

namespace queen::testing {

/// PEM files written by make_test_certificates(). Keys are EC P-256, signatures SHA-256.
struct TestCertificates {
    std::filesystem::path ca_file;                  ///< the CA's certificate
    std::filesystem::path server_certificate_file;  ///< CN=localhost; SAN DNS:localhost,
                                                    ///< IP:127.0.0.1, IP:::1; serverAuth
    std::filesystem::path server_key_file;
    std::filesystem::path client_certificate_file;  ///< CN=test-client; clientAuth
    std::filesystem::path client_key_file;
    /// A second CA that signed nothing here: a peer trusting only it rejects the others.
    std::filesystem::path other_ca_file;
};

/// What make_test_certificates() produces.
struct TestCertificateOptions {
    /// The server certificate's validity, in days from now (negative: in the past, so both ends
    /// before now and the certificate has expired).
    int server_valid_from_days = -1;
    int server_valid_to_days = 1;
    /// The file name prefix inside the directory ("" -> "ca.pem", "server.pem", ...), so one
    /// directory can hold two sets (a renewed certificate for a reload test).
    std::string prefix;
};

/// Generates a fresh CA and the certificates into `directory` (which must exist). Throws
/// std::runtime_error with OpenSSL's reason when a step fails.
TestCertificates make_test_certificates(const std::filesystem::path& directory,
                                        const TestCertificateOptions& options = {});

}  // namespace queen::testing
