// tests/support/src/test_ca.cpp — make_test_certificates() over OpenSSL's X509 API.
#include "queen/testing/test_ca.hpp"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

namespace queen::testing {
namespace {

struct KeyFree {
    void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};
struct CertificateFree {
    void operator()(X509* certificate) const noexcept { X509_free(certificate); }
};
struct FileClose {
    void operator()(std::FILE* file) const noexcept { std::fclose(file); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Certificate = std::unique_ptr<X509, CertificateFree>;

[[noreturn]] void fail(const char* step) {
    char reason[256] = "no OpenSSL error";
    if (const unsigned long code = ERR_get_error(); code != 0) {
        ERR_error_string_n(code, reason, sizeof(reason));
    }
    throw std::runtime_error(std::string("test CA: ") + step + ": " + reason);
}

Key make_key() {
    Key key(EVP_EC_gen("P-256"));
    if (!key) {
        fail("EC key generation");
    }
    return key;
}

void add_extension(X509* certificate, X509* issuer, int nid, const char* value) {
    X509V3_CTX context;
    X509V3_set_ctx_nodb(&context);
    X509V3_set_ctx(&context, issuer, certificate, nullptr, nullptr, 0);
    X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
    if (extension == nullptr || X509_add_ext(certificate, extension, -1) != 1) {
        X509_EXTENSION_free(extension);
        fail("certificate extension");
    }
    X509_EXTENSION_free(extension);
}

struct Subject {
    const char* common_name;
    bool is_ca = false;
    const char* alt_names = nullptr;       // subjectAltName value, or none
    const char* extended_usage = nullptr;  // extendedKeyUsage value, or none
    int valid_from_days = -1;
    int valid_to_days = 1;
};

/// A certificate for `key`, signed by `issuer_key` (self-signed when `issuer` is null).
Certificate make_certificate(const Subject& subject, EVP_PKEY* key, X509* issuer,
                             EVP_PKEY* issuer_key) {
    static long serial = 1;
    Certificate certificate(X509_new());
    if (!certificate || X509_set_version(certificate.get(), 2) != 1) {
        fail("X509_new");
    }
    ASN1_INTEGER_set(X509_get_serialNumber(certificate.get()), ++serial);
    X509_gmtime_adj(X509_getm_notBefore(certificate.get()),
                    static_cast<long>(subject.valid_from_days) * 86400);
    X509_gmtime_adj(X509_getm_notAfter(certificate.get()),
                    static_cast<long>(subject.valid_to_days) * 86400);
    X509_NAME* name = X509_get_subject_name(certificate.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(subject.common_name), -1, -1,
                               0);
    X509_set_issuer_name(certificate.get(),
                         issuer != nullptr ? X509_get_subject_name(issuer) : name);
    if (X509_set_pubkey(certificate.get(), key) != 1) {
        fail("X509_set_pubkey");
    }
    X509* signer = issuer != nullptr ? issuer : certificate.get();
    if (subject.is_ca) {
        add_extension(certificate.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
        add_extension(certificate.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
        add_extension(certificate.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
        add_extension(certificate.get(), signer, NID_key_usage,
                      "critical,digitalSignature,keyAgreement");
    }
    add_extension(certificate.get(), signer, NID_subject_key_identifier, "hash");
    if (subject.alt_names != nullptr) {
        add_extension(certificate.get(), signer, NID_subject_alt_name, subject.alt_names);
    }
    if (subject.extended_usage != nullptr) {
        add_extension(certificate.get(), signer, NID_ext_key_usage, subject.extended_usage);
    }
    if (X509_sign(certificate.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0) {
        fail("X509_sign");
    }
    return certificate;
}

std::unique_ptr<std::FILE, FileClose> open_for_writing(const std::filesystem::path& path) {
    std::unique_ptr<std::FILE, FileClose> file(std::fopen(path.c_str(), "w"));
    if (!file) {
        throw std::runtime_error("test CA: cannot write " + path.string());
    }
    return file;
}

void write_certificate(const std::filesystem::path& path, X509* certificate) {
    const auto file = open_for_writing(path);
    if (PEM_write_X509(file.get(), certificate) != 1) {
        fail("PEM_write_X509");
    }
}

void write_key(const std::filesystem::path& path, EVP_PKEY* key) {
    const auto file = open_for_writing(path);
    if (PEM_write_PrivateKey(file.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
        fail("PEM_write_PrivateKey");
    }
    std::filesystem::permissions(
        path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

}  // namespace

TestCertificates make_test_certificates(const std::filesystem::path& directory,
                                        const TestCertificateOptions& options) {
    const Key ca_key = make_key();
    const Certificate ca = make_certificate(Subject{"Queen Test CA", true, nullptr, nullptr, -1, 2},
                                            ca_key.get(), nullptr, nullptr);
    const Key other_ca_key = make_key();
    const Certificate other_ca =
        make_certificate(Subject{"Queen Other Test CA", true, nullptr, nullptr, -1, 2},
                         other_ca_key.get(), nullptr, nullptr);

    const Key server_key = make_key();
    const Certificate server = make_certificate(
        Subject{"localhost", false, "DNS:localhost,IP:127.0.0.1,IP:::1", "serverAuth",
                options.server_valid_from_days, options.server_valid_to_days},
        server_key.get(), ca.get(), ca_key.get());
    const Key client_key = make_key();
    const Certificate client =
        make_certificate(Subject{"test-client", false, nullptr, "clientAuth", -1, 1},
                         client_key.get(), ca.get(), ca_key.get());

    const std::string& prefix = options.prefix;
    TestCertificates files{
        directory / (prefix + "ca.pem"),     directory / (prefix + "server.pem"),
        directory / (prefix + "server.key"), directory / (prefix + "client.pem"),
        directory / (prefix + "client.key"), directory / (prefix + "other-ca.pem")};
    write_certificate(files.ca_file, ca.get());
    write_certificate(files.other_ca_file, other_ca.get());
    write_certificate(files.server_certificate_file, server.get());
    write_key(files.server_key_file, server_key.get());
    write_certificate(files.client_certificate_file, client.get());
    write_key(files.client_key_file, client_key.get());
    return files;
}

}  // namespace queen::testing
