"""A second, secured Elasticsearch node for the security tests: x-pack security on, HTTPS only.

The stack's distribution (Elastic's integ-test-zip, deploy/local/fetch.sh) ships the
``x-pack-core`` and ``x-pack-security`` modules; the shared node on 9200 runs with security off.
This module starts one more node from the same distribution, on two free loopback ports, with:

- a throwaway CA and a node certificate for ``localhost``/``127.0.0.1`` (openssl: two key pairs
  in well under a second; ``elasticsearch-certutil`` ships too but costs ~7 s of JVM start per
  call on this 2-core box, and the node must be up within ~60 s);
- HTTP and transport TLS from that CA;
- a bootstrap password for the ``elastic`` user (``elasticsearch-keystore add bootstrap.password``).

API keys cannot be created on this node: they live in the ``.security`` system index, whose
settings use the ``pattern_capture`` token filter of the ``analysis-common`` module, which the
integ-test-zip does not ship (``POST /_security/api_key`` answers 400 "Unknown filter type
[pattern_capture]"), and Maven Central serves no analysis-common module for 9.2.4
(docs/security.md, "Tested for real"). The node does authenticate every request, so an API key is
sent and refused for real (401); basic auth is the credential that succeeds.

Where the distribution is: deploy/local/env.sh decides (``STACK_DIR`` in the environment points
it at another clone's stack). The node runs as the stack's ``$ES_USER`` (Elasticsearch refuses
root), from a directory under /tmp that user can traverse (the mode-700 rule of env.sh). A node
that does not come up FAILS the tests that need it, with its log; it is stopped at the session's
end and its directory removed.
"""

from __future__ import annotations

import base64
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.timing import deadline as deadline_after

REPO = Path(__file__).resolve().parents[2]
START_DEADLINE_S = 150.0  # the node usually answers within ~60 s; a busy CI box gets slack

__all__ = ["SecureNode", "secure_es", "stack_env"]


@dataclass(frozen=True, slots=True)
class SecureNode:
    url: str
    ca_certs: Path  # the CA that signed the node's certificate (PEM)
    username: str
    password: str
    log: Path


def stack_env() -> dict[str, str]:
    """The local stack's settings as deploy/local/env.sh computes them."""
    names = (
        "ES_USER",
        "ES_JAVA_HOME",
        "DIST_DIR",
        "SVC_DIR",
        "STACK_DIR",
        "ES_DIR",
        "MYSQL_SOCKET",
    )
    script = "source deploy/local/env.sh && " + " && ".join(f'echo "${n}"' for n in names)
    out = subprocess.run(
        ["bash", "-c", script], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    return dict(zip(names, out, strict=True))


def _es_home(stack: dict[str, str]) -> Path:
    """The distribution directory the stack's ES user can run (deploy/local/elasticsearch.sh)."""
    dists = sorted(Path(stack["DIST_DIR"]).glob("elasticsearch-*"))
    if not dists:
        pytest.fail(
            f"no Elasticsearch distribution under {stack['DIST_DIR']}: run deploy/local/fetch.sh",
            pytrace=False,
        )
    home = dists[0]
    if stack["SVC_DIR"] != stack["STACK_DIR"]:
        home = Path(stack["ES_DIR"]) / home.name
    if not (home / "bin" / "elasticsearch").is_file():
        pytest.fail(f"{home}/bin/elasticsearch missing: start the stack first", pytrace=False)
    if not (home / "modules" / "x-pack-security").is_dir():
        pytest.fail(f"{home} has no x-pack-security module", pytrace=False)
    return home


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_OPENSSL_CONFIG = """
[req]
distinguished_name = dn
prompt = no
[dn]
CN = searchsync test CA
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[node]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""


def _certificates(certs: Path) -> None:
    certs.mkdir(parents=True)
    (certs / "openssl.cnf").write_text(_OPENSSL_CONFIG)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=certs, check=True, capture_output=True)

    new_key = ("-newkey", "rsa:2048", "-nodes", "-config", "openssl.cnf")
    openssl(
        "req", "-x509", *new_key, "-extensions", "ca",
        "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
    )  # fmt: skip
    openssl("req", *new_key, "-keyout", "node.key", "-out", "node.csr", "-subj", "/CN=localhost")
    openssl(
        "x509", "-req", "-in", "node.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "node.crt", "-days", "2",
        "-extfile", "openssl.cnf", "-extensions", "node",
    )  # fmt: skip


def _config(work: Path, http_port: int, transport_port: int) -> str:
    tls = "\n".join(
        f"xpack.security.{layer}.ssl.{key}: {value}"
        for layer in ("http", "transport")
        for key, value in (
            ("enabled", "true"),
            ("key", "certs/node.key"),
            ("certificate", "certs/node.crt"),
            ("certificate_authorities", "[certs/ca.crt]"),
        )
    )
    return f"""cluster.name: searchsync-secure
node.name: secure-1
path.data: {work}/data
path.logs: {work}/logs
network.host: 127.0.0.1
http.port: {http_port}
transport.port: {transport_port}
discovery.type: single-node
xpack.security.enabled: true
{tls}
xpack.security.transport.ssl.verification_mode: certificate
xpack.ml.enabled: false
cluster.routing.allocation.disk.threshold_enabled: false
"""


def _healthy(node: SecureNode) -> bool:
    context = ssl.create_default_context(cafile=str(node.ca_certs))
    token = base64.b64encode(f"{node.username}:{node.password}".encode()).decode()
    request = urllib.request.Request(
        f"{node.url}/_cluster/health?wait_for_status=yellow&timeout=1s",
        headers={"Authorization": f"Basic {token}"},
    )
    try:
        with urllib.request.urlopen(request, context=context, timeout=5) as response:
            body = response.read()
    except (urllib.error.URLError, OSError):
        return False
    return b'"status":"green"' in body or b'"status":"yellow"' in body


def _stop(pid_file: Path) -> None:
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text().strip())
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = deadline_after(60)
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.2)
    if Path(f"/proc/{pid}").exists():
        os.kill(pid, signal.SIGKILL)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no {path})"


@pytest.fixture(scope="session")
def secure_es() -> Iterator[SecureNode]:
    """Start the secured node for this session; FAIL (never skip) when it does not come up."""
    stack = stack_env()
    home = _es_home(stack)
    user, java = stack["ES_USER"], stack["ES_JAVA_HOME"]
    work = Path(tempfile.mkdtemp(prefix="searchsync-secure-es-"))
    work.chmod(0o755)
    conf = work / "config"
    shutil.copytree(home / "config", conf)
    (conf / "elasticsearch.keystore").unlink(missing_ok=True)
    for name in ("data", "logs", "tmp"):
        (work / name).mkdir()
    http_port, transport_port = _free_port(), _free_port()
    (conf / "elasticsearch.yml").write_text(_config(work, http_port, transport_port))
    _certificates(conf / "certs")
    password = f"es-bootstrap-{secrets.token_hex(8)}"
    tool_env = {**os.environ, "ES_JAVA_HOME": java, "ES_PATH_CONF": str(conf)}
    subprocess.run(
        [str(home / "bin" / "elasticsearch-keystore"), "add", "-x", "-f", "bootstrap.password"],
        input=password, text=True, env=tool_env, check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run(["chown", "-R", user, str(work)], check=True)
    node = SecureNode(
        url=f"https://127.0.0.1:{http_port}",
        ca_certs=conf / "certs" / "ca.crt",
        username="elastic",
        password=password,
        log=work / "logs" / "searchsync-secure.log",
    )
    pid_file = work / "es.pid"
    out = work / "start.out"
    try:
        with out.open("wb") as sink:
            started = subprocess.run(
                ["runuser", "-u", user, "--", "env", f"ES_JAVA_HOME={java}",
                 f"ES_PATH_CONF={conf}", f"ES_TMPDIR={work / 'tmp'}",
                 "ES_JAVA_OPTS=-Xms512m -Xmx512m",
                 str(home / "bin" / "elasticsearch"), "-d", "-p", str(pid_file)],
                stdout=sink, stderr=subprocess.STDOUT, timeout=START_DEADLINE_S, check=False,
            )  # fmt: skip
        if started.returncode != 0:
            pytest.fail(f"the secured node did not start:\n{_tail(out)}", pytrace=False)
        deadline = deadline_after(START_DEADLINE_S)
        while not _healthy(node):
            if time.monotonic() > deadline:
                pytest.fail(
                    f"the secured node at {node.url} was not healthy after {START_DEADLINE_S}s:"
                    f"\n{_tail(node.log)}",
                    pytrace=False,
                )
            time.sleep(0.5)
        yield node
    finally:
        _stop(pid_file)
        shutil.rmtree(work, ignore_errors=True)
