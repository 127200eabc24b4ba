"""tests/integration/test_tls_cli.py — `queen admin` and `queen bench` (the C++ client) against a
real `queen serve` with HTTPS: --ca-file and QUEEN_CA_FILE, a certificate nobody trusts refused
with the verifier's reason (exit 1, not retryable), --insecure with its warning, client
certificates when the broker requires them, and an e2e bench run whose every message crosses TLS."""

import json
import os
import subprocess
import unittest

from harness import QUEEN_BIN
from test_tls import TlsTestCase, make_ca, make_certificate


class TlsCli(TlsTestCase):
    def url(self):
        return f"https://127.0.0.1:{self.server.port}"

    def admin(self, *args, env=None):
        return subprocess.run([QUEEN_BIN, "admin", "--url", self.url(), *args], capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL,
                              env=dict(os.environ, **(env or {})))

    def bench(self, *args):
        cmd = [QUEEN_BIN, "bench", "e2e", "--url", self.url(), "--json", "--server-pid",
               str(self.server.process.pid), "--producers", "2", "--consumers", "2", "--batch",
               "10", "--messages", "300", "--partitions", "3", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

    def test_admin_verifies_the_broker_with_ca_file_or_queen_ca_file(self):
        self.start()
        out = self.admin("--ca-file", self.ca, "health", "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout)["status"], "healthy")
        out = self.admin("health", env={"QUEEN_CA_FILE": self.ca})
        self.assertEqual(out.returncode, 0, out.stderr)

        make_ca(self.dir, "other")
        out = self.admin("--ca-file", self.path("other.pem"), "health")
        self.assertEqual(out.returncode, 1, out.stderr)  # not retryable
        self.assertIn(f"tls handshake with {self.url()}: certificate verify failed", out.stderr)

        out = self.admin("--insecure", "health")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("warning: --insecure", out.stderr)

        out = self.admin("--ca-file", self.path("absent.pem"), "health")
        self.assertEqual(out.returncode, 2, out.stderr)  # a usage error, said by the flag check
        self.assertIn("absent.pem", out.stderr)
        out = self.admin("--ca-file", self.ca, "--client-cert", self.path("server.pem"), "health")
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("--client-cert and --client-key go together", out.stderr)

    def test_client_certificates_when_the_broker_requires_them(self):
        make_certificate(self.dir, "ca", "client", "clientAuth")
        self.start(**{"http.tls_client_ca_file": self.ca})
        with_certificate = ["--ca-file", self.ca, "--client-cert", self.path("client.pem"),
                            "--client-key", self.path("client.key")]
        out = self.admin(*with_certificate, "queues", "list", "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        out = self.admin("--ca-file", self.ca, "queues", "list")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("alert", out.stderr)

        ran = self.bench(*with_certificate, "--queue", "tls-mutual")
        self.assertEqual(ran.returncode, 0, ran.stderr)
        report = json.loads(ran.stdout)
        self.assertEqual(report["errors"], 0)
        self.assertEqual(report["produced"], 300)
        self.assertEqual(report["consumed"], 300)

    def test_bench_e2e_over_https(self):
        self.start()
        ran = self.bench("--ca-file", self.ca, "--queue", "tls-e2e")
        self.assertEqual(ran.returncode, 0, ran.stderr)
        report = json.loads(ran.stdout)
        self.assertEqual(report["errors"], 0)
        self.assertEqual(report["produced"], 300)
        self.assertEqual(report["consumed"], 300)
        self.assertGreater(report["conditions"]["server_rss_bytes"], 0)

        make_ca(self.dir, "other")
        refused = self.bench("--ca-file", self.path("other.pem"), "--queue", "tls-refused")
        self.assertEqual(refused.returncode, 1, refused.stderr)
        self.assertIn("certificate verify failed", refused.stderr)


if __name__ == "__main__":
    unittest.main()
