"""Issue #24 (Low): the site server answers a path component over 255 bytes with 404 (it used to
close the connection and print a traceback) and disconnects a client that never finishes its request."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from engine.site import build


@pytest.fixture
def server(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "IDLE_TIMEOUT_S", 1, raising=False)
    (tmp_path / "index.html").write_text("home")
    httpd = build.make_server(str(tmp_path), "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _get(httpd, path: str) -> tuple[int, bytes]:
    import http.client

    conn = http.client.HTTPConnection(*httpd.server_address[:2], timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_a_path_component_over_255_bytes_is_404_without_a_traceback(server, capsys):
    status, _ = _get(server, "/" + "a" * 300)
    assert status == 404
    status, _ = _get(server, "/" + "a" * 300 + "/index.html")
    assert status == 404
    assert _get(server, "/") == (200, b"home")  # the server goes on
    assert "Traceback" not in capsys.readouterr().err


def test_an_idle_client_is_disconnected(server):
    with socket.create_connection(server.server_address[:2], timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # never the blank line that ends the headers
        start = time.monotonic()
        assert sock.recv(1024) == b""  # closed by the server
        assert time.monotonic() - start < 8
