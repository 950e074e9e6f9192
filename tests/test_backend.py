"""The backend client's rules that need no server."""

from server.backend.client import key_may_travel


def test_the_api_key_travels_only_over_tls_or_loopback() -> None:
    assert key_may_travel("https://gpu.example.com/v1")
    assert key_may_travel("http://127.0.0.1:8000/v1")
    assert key_may_travel("http://localhost:8000/v1")
    assert key_may_travel("http://[::1]:8000/v1")
    assert not key_may_travel("http://gpu.example.com:8000/v1")
    assert not key_may_travel("http://10.0.0.5:8000/v1")
