"""tests/integration/test_encryption.py — payload encryption of a `queen serve` started with the
defaults: the node creates its key in the data directory, payloads of encrypted queues are sealed
at rest, the key survives restarts, unsafe key files stop the start, and operators can supply the
key or turn encryption off (docs/security.md)."""
import glob
import hashlib
import os
import re
import stat
import subprocess
import tempfile
import unittest

from harness import QUEEN_BIN, Server

# An empty value counts as unset: the tests do not depend on the caller's environment.
NO_ENV_KEY = {"QUEEN_ENCRYPTION_KEY": ""}
KEY = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"


def key_lines(output):
    """(source, fingerprint, created) of every node.encryption_key line."""
    return re.findall(r"node\.encryption_key source=(\S+) .*fingerprint=([0-9a-f]{16}) created=(\w+)", output)


def fingerprint_of(key_hex):
    return hashlib.sha256(bytes.fromhex(key_hex)).hexdigest()[:16]


def serve_fails(data_dir, settings=None, env=None):
    """Runs `queen serve` that must refuse to start; returns (exit code, output)."""
    cmd = [QUEEN_BIN, "serve", "--data-dir", data_dir, "--set", "http.address=127.0.0.1", "--set", "http.port=0"]
    for key, value in (settings or {}).items():
        cmd += ["--set", f"{key}={value}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=dict(os.environ, **(env or NO_ENV_KEY)))
    return out.returncode, out.stdout + out.stderr


def configure_encrypted(client, queue):
    r = client.post("/api/v1/configure", {"queue": queue, "options": {"encryptionEnabled": True}})
    assert r.status == 200, r


def pop_data(client, queue, **params):
    r = client.pop(queue, wait=False, **params)
    assert r.status == 200, r
    return [m["data"] for m in r.json()["messages"]]


class DefaultKey(unittest.TestCase):
    def setUp(self):
        self.server = Server(env=NO_ENV_KEY)
        self.key_file = os.path.join(self.server.data_dir, "keys", "payload.key")

    def tearDown(self):
        self.server.cleanup()

    def test_a_default_broker_seals_payloads_at_rest_and_keeps_its_key_across_restarts(self):
        server = self.server.start()
        client = server.client()
        configure_encrypted(client, "secret")
        secret = "secret-marker-4111111111111111"
        later = "later-marker-5500005555555559"
        plain = "plain-marker-378282246310005"
        self.assertEqual(client.push("secret", [{"card": secret}]).status, 201)
        self.assertEqual(client.push("secret", [{"card": later}]).status, 201)
        self.assertEqual(client.push("plain", [{"card": plain}]).status, 201)
        self.assertEqual(pop_data(client, "secret", autoAck=True), [{"card": secret}])
        self.assertEqual(pop_data(client, "plain"), [{"card": plain}])
        first_run = key_lines(server.output())
        self.assertEqual(len(first_run), 1, server.output())
        self.assertEqual((first_run[0][0], first_run[0][2]), ("data_dir", "true"))
        client.close()
        self.assertEqual(server.stop(), 0)

        # The key file: 64 hex digits and a newline, readable by its owner only.
        self.assertEqual(stat.S_IMODE(os.stat(self.key_file).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(self.key_file)).st_mode), 0o700)
        with open(self.key_file) as f:
            key_text = f.read()
        self.assertRegex(key_text, r"^[0-9a-f]{64}\n$")
        self.assertEqual(first_run[0][1], fingerprint_of(key_text.strip()))

        # At rest: the plain payload is in LMDB in clear (so the check below can fail), the
        # encrypted ones are in no file of the tenant, log segments included.
        mdb = os.path.join(server.data_dir, "tenants", "default", "state", "data.mdb")
        with open(mdb, "rb") as f:
            state = f.read()
        self.assertIn(plain.encode(), state)
        self.assertNotIn(secret.encode(), state)
        self.assertNotIn(later.encode(), state)
        for path in glob.glob(os.path.join(server.data_dir, "tenants", "*", "*", "*")):
            with open(path, "rb") as f:
                stored = f.read()
            self.assertNotIn(secret.encode(), stored, path)
            self.assertNotIn(later.encode(), stored, path)

        # A restart reads the same key and decrypts what was pushed before it.
        server.start()
        client = server.client()
        self.assertEqual(pop_data(client, "secret"), [{"card": later}])
        client.close()
        second_run = key_lines(server.output())
        self.assertEqual(second_run[-1], ("data_dir", first_run[0][1], "false"))
        with open(self.key_file) as f:
            self.assertEqual(f.read(), key_text)
        self.assertEqual(stat.S_IMODE(os.stat(self.key_file).st_mode), 0o600)
        self.assertEqual(server.stop(), 0)

    def test_an_unsafe_or_malformed_key_file_stops_the_start_and_is_kept(self):
        self.server.start()
        self.assertEqual(self.server.stop(), 0)
        with open(self.key_file) as f:
            key_text = f.read()

        os.chmod(self.key_file, 0o644)
        code, output = serve_fails(self.server.data_dir)
        self.assertEqual(code, 1, output)
        self.assertIn(self.key_file + ": mode 0644 gives group or others access", output)
        self.assertIn("chmod 600", output)
        self.assertNotIn(key_text.strip(), output)

        os.chmod(self.key_file, 0o600)
        with open(self.key_file, "w") as f:
            f.write(key_text[:63] + "\n")
        code, output = serve_fails(self.server.data_dir)
        self.assertEqual(code, 1, output)
        self.assertIn(self.key_file + ": expected 64 hex digits", output)
        self.assertIn("found 63 characters", output)
        with open(self.key_file) as f:
            self.assertEqual(f.read(), key_text[:63] + "\n")  # never replaced

        with open(self.key_file, "w") as f:
            f.write(key_text)
        self.server.start()
        self.assertEqual(key_lines(self.server.output())[-1][2], "false")


class SuppliedKey(unittest.TestCase):
    def setUp(self):
        self.secrets = tempfile.mkdtemp(prefix="queen-it-key-", dir=os.environ.get("QUEEN_TEST_DIR"))
        self.key_file = os.path.join(self.secrets, "payload.key")
        fd = os.open(self.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, (KEY + "\n").encode())
        os.close(fd)
        self.servers = []

    def tearDown(self):
        for server in self.servers:
            server.cleanup()
        os.unlink(self.key_file)
        os.rmdir(self.secrets)

    def test_every_node_given_the_same_key_file_runs_with_that_key_and_creates_none(self):
        for _ in range(2):
            server = Server(settings={"security.encryption_key_file": self.key_file}, env=NO_ENV_KEY)
            self.servers.append(server)
            server.start()
            self.assertEqual(key_lines(server.output()),
                             [("security.encryption_key_file", fingerprint_of(KEY), "false")])
            self.assertFalse(os.path.exists(os.path.join(server.data_dir, "keys")))
            client = server.client()
            configure_encrypted(client, "secret")
            self.assertEqual(client.push("secret", [{"n": 1}]).status, 201)
            self.assertEqual(pop_data(client, "secret"), [{"n": 1}])
            client.close()

    def test_a_missing_key_file_named_in_the_settings_stops_the_start(self):
        with tempfile.TemporaryDirectory(dir=os.environ.get("QUEEN_TEST_DIR")) as data_dir:
            missing = os.path.join(self.secrets, "missing.key")
            code, output = serve_fails(data_dir, {"security.encryption_key_file": missing})
            self.assertEqual(code, 1, output)
            self.assertIn(f"security.encryption_key_file: {missing}: no such key file", output)
            self.assertFalse(os.path.exists(missing))
            self.assertFalse(os.path.exists(os.path.join(data_dir, "keys")))

    def test_the_environment_key_wins_over_the_settings(self):
        other = "ff" * 32
        server = Server(settings={"security.encryption_key_file": self.key_file},
                        env={"QUEEN_ENCRYPTION_KEY": other})
        self.servers.append(server)
        server.start()
        self.assertEqual(key_lines(server.output()), [("QUEEN_ENCRYPTION_KEY", fingerprint_of(other), "false")])


class EncryptionOff(unittest.TestCase):
    def test_encrypted_queues_refuse_pushes_naming_the_setting(self):
        server = Server(settings={"security.payload_encryption": "false"}, env=NO_ENV_KEY)
        try:
            server.start()
            self.assertIn("node.encryption_disabled", server.output())
            client = server.client()
            configure_encrypted(client, "secret")
            r = client.push("secret", [{"card": "4111"}])
            self.assertEqual(r.status, 500, r)
            self.assertIn("security.payload_encryption = false", r.json()["error"])
            self.assertEqual(client.push("plain", [1]).status, 201)
            client.close()
            self.assertFalse(os.path.exists(os.path.join(server.data_dir, "keys")))
            server.stop()

            code, output = serve_fails(server.data_dir, {"security.payload_encryption": "false"},
                                       env={"QUEEN_ENCRYPTION_KEY": KEY})
            self.assertEqual(code, 1, output)
            self.assertIn("QUEEN_ENCRYPTION_KEY is set, but security.payload_encryption = false", output)
            code, output = serve_fails(server.data_dir, {"security.payload_encryption": "false",
                                                         "security.encryption_key": KEY})
            self.assertEqual(code, 2, output)
            self.assertIn("security.payload_encryption = false", output)
        finally:
            server.cleanup()


if __name__ == "__main__":
    unittest.main()
