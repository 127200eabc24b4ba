"""tests/integration/test_auth.py — bearer tokens against a real `queen serve` (docs/security.md):
static tokens from a file, HS256 and RS256 JWTs (signed here with hmac and the openssl CLI), the
401/403 answers, `queen admin --token`, and the start-up warning of an open node listening beyond
loopback."""

import base64
import hashlib
import hmac
import json
import os
import subprocess
import tempfile
import time

from harness import QUEEN_BIN, Server, ServerTestCase, wait_until

SECRET = "integration-hs256-secret-0123456789abcdef"
WRITER = "tok-writer-0123456789"
READER = "tok-reader-0123456789"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(claims, alg="HS256", key_file=None, kid=None):
    header = {"alg": alg, "typ": "JWT"}
    if kid:
        header["kid"] = kid
    signed = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    if alg == "HS256":
        signature = hmac.new(SECRET.encode(), signed.encode(), hashlib.sha256).digest()
    else:
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key_file],
                                   input=signed.encode(), capture_output=True, check=True).stdout
    return signed + "." + b64url(signature)


def make_files():
    directory = tempfile.mkdtemp(prefix="queen-auth-")
    tokens = os.path.join(directory, "tokens")
    with open(tokens, "w") as f:
        f.write(f"producer write default {WRITER}\nviewer read default {READER}\n")
    os.chmod(tokens, 0o600)
    private = os.path.join(directory, "rsa.pem")
    public = os.path.join(directory, "rsa.pub.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-out", private], check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", private, "-pubout", "-out", public], check=True,
                   capture_output=True)
    return tokens, private, public


TOKENS, PRIVATE_KEY, PUBLIC_KEY = make_files()


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


class Tokens(ServerTestCase):
    settings = {"auth.enabled": "true", "auth.tokens_file": TOKENS,
                "auth.jwt_hs256_secret": SECRET, "auth.jwt_public_key_file": PUBLIC_KEY,
                "auth.jwt_audience": "queen"}

    def push(self, headers):
        return self.client.post("/api/v1/push", {"items": [{"queue": "q", "payload": 1}]},
                                headers=headers)

    def test_static_tokens_and_roles(self):
        self.assertEqual(self.client.get("/health").status, 200)  # public
        r = self.push({})
        self.assertEqual(r.status, 401, r)
        self.assertEqual(r.json()["error"], "Authentication required")
        self.assertEqual(r.headers.get("www-authenticate"), "Bearer")
        self.assertEqual(self.push(bearer("tok-nobody-0123456789")).status, 401)
        self.assertEqual(self.push(bearer(READER)).status, 403)
        self.assertEqual(self.push(bearer(WRITER)).status, 201)
        # A reader lists, cannot pop (a pop leases) nor configure.
        r = self.client.get("/api/v1/resources/queues", headers=bearer(READER))
        self.assertEqual([q["name"] for q in r.json()["queues"]], ["q"])
        self.assertEqual(self.client.get("/api/v1/pop/queue/q?wait=false", headers=bearer(READER)).status, 403)
        self.assertEqual(self.client.post("/api/v1/configure", {"queue": "q"}, headers=bearer(WRITER)).status, 403)
        r = self.client.get("/api/v1/pop/queue/q?wait=false", headers=bearer(WRITER))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["messages"][0]["producerSub"], "producer")  # the token's name
        # Another tenant: the tokens grant "default" only.
        r = self.client.get("/api/v1/resources/queues", headers=dict(bearer(READER), **{"X-Queen-Tenant": "other"}))
        self.assertEqual(r.status, 403, r)

    def test_jwts(self):
        now = int(time.time())
        good = {"sub": "svc", "role": "read-write", "aud": "queen", "exp": now + 600}
        self.assertEqual(self.push(bearer(jwt(good))).status, 201)
        r = self.client.get("/api/v1/pop/queue/q?wait=false", headers=bearer(jwt(good)))
        self.assertEqual(r.json()["messages"][0]["producerSub"], "svc")  # the JWT's sub
        self.assertEqual(self.push(bearer(jwt(good, "RS256", PRIVATE_KEY))).status, 201)
        r = self.push(bearer(jwt(dict(good, exp=now - 600))))
        self.assertEqual((r.status, r.json()["error"]), (401, "Token has expired"))
        r = self.push(bearer(jwt(dict(good, aud="other"))))
        self.assertEqual((r.status, r.json()["error"]), (401, "Invalid token audience"))
        r = self.push(bearer(jwt(dict(good, role="read-only"))))
        self.assertEqual((r.status, r.json()["error"]), (403, "Insufficient permissions"))
        r = self.push(bearer(jwt(good)[:-4] + "AAAA"))
        self.assertEqual((r.status, r.json()["error"]), (401, "Invalid token signature"))
        # The admin command passes --token.
        admin = jwt(dict(good, role="admin"))
        base = [QUEEN_BIN, "admin", "--url", f"http://127.0.0.1:{self.server.port}", "--json"]
        denied = subprocess.run(base + ["queues", "list"], capture_output=True, text=True)
        self.assertNotEqual(denied.returncode, 0, denied.stdout)
        self.assertIn("Authentication required", denied.stdout + denied.stderr)
        allowed = subprocess.run(base + ["--token", admin, "queues", "list"], capture_output=True,
                                 text=True)
        self.assertEqual(allowed.returncode, 0, allowed.stdout + allowed.stderr)
        self.assertIn('"q"', allowed.stdout)


class OpenBeyondLoopback(ServerTestCase):
    settings = {"http.address": "0.0.0.0"}

    def test_an_open_node_beyond_loopback_warns_at_start(self):
        wait_until(lambda: "auth.disabled" in self.server.output(), timeout=10,
                   what="the auth.disabled warning")
        self.assertIn("OFF: whoever reaches the port", self.server.output())


class BadAuthSettings(ServerTestCase):
    def test_enabled_without_keys_or_a_readable_tokens_file_refuses_to_start(self):
        for settings, words in [({"auth.enabled": "true"}, "nothing to check tokens against"),
                                ({"auth.enabled": "true", "auth.tokens_file": "/nonexistent/tokens"},
                                 "/nonexistent/tokens")]:
            server = Server(settings=settings)
            server.spawn()
            code = server.process.wait(timeout=30)
            self.assertNotEqual(code, 0)
            self.assertIn(words, server.output())
            server.cleanup()
