"""tests/integration/test_serve.py — `queen serve`: config, data directory, signals, exit codes."""
import os
import signal
import subprocess
import tempfile
import unittest

from harness import QUEEN_BIN, SOURCE_DIR, Server


class ServeTest(unittest.TestCase):
    def test_print_config_matches_the_shipped_conf_file(self):
        # conf/queen.toml documents every key with its default: it must equal what the binary
        # prints for the embedded defaults (regenerate with `queen serve --print-config`).
        out = subprocess.run([QUEEN_BIN, "serve", "--print-config"], capture_output=True, text=True, check=True)
        with open(os.path.join(SOURCE_DIR, "conf/queen.toml")) as f:
            shipped = f.read()
        body = "".join(line for line in shipped.splitlines(keepends=True) if not line.startswith("#!"))
        self.assertEqual(out.stdout, body, "conf/queen.toml is out of date: see tools/gen_conf.sh")

    def test_the_shipped_conf_file_loads(self):
        out = subprocess.run([QUEEN_BIN, "serve", "--config", os.path.join(SOURCE_DIR, "conf/queen.toml"),
                              "--port", "7777", "--print-config"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("port = 7777", out.stdout)

    def test_unknown_keys_and_wrong_types_are_usage_errors(self):
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write("[http]\nprot = 1\n")
        out = subprocess.run([QUEEN_BIN, "serve", "--config", f.name, "--print-config"], capture_output=True, text=True)
        os.unlink(f.name)
        self.assertEqual(out.returncode, 2)
        self.assertIn("http.prot", out.stderr)
        out = subprocess.run([QUEEN_BIN, "serve", "--set", "http.port=abc", "--print-config"], capture_output=True,
                             text=True)
        self.assertEqual(out.returncode, 2)
        self.assertIn("http.port must be an integer", out.stderr)
        out = subprocess.run([QUEEN_BIN, "serve", "--bogus"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)

    def test_starts_creates_the_data_directory_and_stops_cleanly_on_sigterm_and_sigint(self):
        with Server() as server:
            for name in ("node.toml", "LOCK", "tenants/default/log", "tenants/default/state/data.mdb"):
                self.assertTrue(os.path.exists(os.path.join(server.data_dir, name)), name)
            self.assertIn("[http]", server.output())
            client = server.client()
            self.assertEqual(client.get("/health").status, 200)
            client.close()
            self.assertEqual(server.stop(signal.SIGTERM), 0)
            self.assertIn("node.stopped", server.output())
            server.start()
            self.assertEqual(server.stop(signal.SIGINT), 0)

    def test_a_second_process_on_the_same_data_directory_is_refused(self):
        with Server() as first:
            second = Server(data_dir=first.data_dir)
            with self.assertRaises(RuntimeError):
                second.start(timeout=20)
            self.assertIn("another queen process", second.output())

    def test_node_toml_keeps_the_node_identity(self):
        with Server() as server:
            server.stop()
            other = Server(data_dir=server.data_dir, settings={"node.id": "2"})
            with self.assertRaises(RuntimeError):
                other.start(timeout=20)
            self.assertIn("belongs to node 1", other.output())


if __name__ == "__main__":
    unittest.main()
