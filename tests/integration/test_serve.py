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
            client = server.client()
            self.assertEqual(client.get("/health").status, 200)
            client.close()
            port = server.port
            self.assertEqual(server.stop(signal.SIGTERM), 0)
            # A short banner, not the whole config (that needs --print-config or debug logging).
            # (Read after stop: the ready line follows node.listening, which start() waits for.)
            self.assertIn(f"queen: ready on http://127.0.0.1:{port}\n", server.output())
            self.assertNotIn("[http]", server.output())
            self.assertIn("node.stopped", server.output())
            server.start()
            self.assertEqual(server.stop(signal.SIGINT), 0)

    def test_the_banner_says_version_url_data_dir_and_where_the_settings_came_from(self):
        server = Server()
        del server.settings["http.address"]  # the default
        server.settings["http.port"] = "0"
        try:
            server.start()
            out = server.output()
            lines = out.splitlines()
            self.assertRegex(lines[0], r"^queen \d+\.\d+\.\d+, single node$")
            self.assertIn("  url       http://127.0.0.1:<port chosen at start> (this machine only", out)
            self.assertIn("  data dir  " + os.path.abspath(server.data_dir) + "\n", out)
            self.assertIn("  config    built-in defaults; overridden by --set http.port=0 "
                          "--set tenant.sweep_interval_ms=200 --data-dir " + server.data_dir, out)
            port = server.port
            self.assertEqual(server.stop(), 0)
            out = server.output()  # complete once stopped: the ready line follows node.listening
            # The default listener is loopback only.
            self.assertIn(f"node.listening http=127.0.0.1:{port} ", out)
            self.assertIn(f"queen: ready on http://127.0.0.1:{port}\n", out)
            server.args = ["--log-level", "debug"]
            server.log_lines.clear()
            server.start()
            self.assertIn("[http]", server.output(), "debug logging prints the effective config")
        finally:
            server.cleanup()

    def test_the_banner_names_the_config_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write("[tenant]\nsweep_interval_ms = 300\n")
        try:
            with Server(args=["--config", f.name]) as server:
                self.assertIn("  config    " + f.name + " (over the built-in defaults); overridden by",
                              server.output())
        finally:
            os.unlink(f.name)

    def test_defaults_listen_on_loopback_and_one_setting_or_flag_changes_it(self):
        def printed(*args):
            out = subprocess.run([QUEEN_BIN, "serve", *args, "--print-config"], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            return out.stdout
        defaults = printed()
        self.assertIn('\naddress = "127.0.0.1"\n', defaults)
        self.assertIn("\ncors_allowed_origins = []\n", defaults)
        self.assertIn('\naddress = "0.0.0.0"\n', printed("--address", "0.0.0.0"))
        self.assertIn('\naddress = "::"\n', printed("--set", "http.address=::"))
        out = subprocess.run([QUEEN_BIN, "serve", "--address", "localhost", "--print-config"],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)
        self.assertIn("http.address", out.stderr)
        self.assertIn('\ncors_allowed_origins = ["http://localhost:3000", "https://x.example"]\n',
                      printed("--set", "http.cors_allowed_origins=http://localhost:3000,https://x.example"))

    def test_the_removed_cors_keys_are_refused_with_their_replacement(self):
        for line in ("cors_enabled = false", 'cors_allow_origin = "*"'):
            with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
                f.write("[http]\n" + line + "\n")
            out = subprocess.run([QUEEN_BIN, "serve", "--config", f.name, "--print-config"],
                                 capture_output=True, text=True)
            os.unlink(f.name)
            self.assertEqual(out.returncode, 2, line)
            self.assertIn("http." + line.split(" ")[0] + " is no longer a setting", out.stderr)
            self.assertIn("http.cors_allowed_origins", out.stderr)
        out = subprocess.run([QUEEN_BIN, "serve", "--set", "http.cors_enabled=true", "--print-config"],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)
        self.assertIn("http.cors_allowed_origins", out.stderr)

    def test_cors_answers_only_the_listed_origins(self):
        with Server() as server:
            client = server.client()
            response = client.get("/health", headers={"Origin": "http://localhost:3000"})
            self.assertEqual(response.status, 200)
            self.assertNotIn("access-control-allow-origin", response.headers)
            client.close()
        with Server(settings={"http.cors_allowed_origins": "http://localhost:3000"}) as server:
            client = server.client()
            listed = client.get("/health", headers={"Origin": "http://localhost:3000"})
            self.assertEqual(listed.headers.get("access-control-allow-origin"), "http://localhost:3000")
            self.assertEqual(listed.headers.get("vary"), "Origin")
            other = client.get("/health", headers={"Origin": "http://evil.example"})
            self.assertNotIn("access-control-allow-origin", other.headers)
            preflight = client.request("OPTIONS", "/api/v1/resources/queues/orders",
                                       headers={"Origin": "http://evil.example",
                                                "Access-Control-Request-Method": "DELETE"})
            self.assertEqual(preflight.status, 204)
            self.assertFalse([h for h in preflight.headers if h.startswith("access-control-")])
            preflight = client.request("OPTIONS", "/api/v1/resources/queues/orders",
                                       headers={"Origin": "http://localhost:3000",
                                                "Access-Control-Request-Method": "DELETE"})
            self.assertEqual(preflight.status, 204)
            self.assertEqual(preflight.headers.get("access-control-allow-origin"), "http://localhost:3000")
            self.assertIn("DELETE", preflight.headers.get("access-control-allow-methods", ""))
            client.close()

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
