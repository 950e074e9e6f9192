"""The editor's log handler once the channel to the editor is closed."""

import logging
from collections.abc import Iterator

import pytest
from lsprotocol import types

from server.lsp.logs import EditorLogHandler

log = logging.getLogger("server.lsp.test_logs")


class ClosedChannel:
    """A server whose output is closed (the editor sent `exit`): a message it sends fails,
    and the failure is reported as pygls reports it, by the server logging an error."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def window_log_message(self, params: types.LogMessageParams) -> None:
        self.sent.append(params.message)
        try:
            raise ValueError("I/O operation on closed file")
        except ValueError as error:  # pygls: _send_data -> _report_server_error
            log.error("JsonRpcInternalError: %s", error)


@pytest.fixture
def channel() -> Iterator[ClosedChannel]:
    sink = ClosedChannel()
    handler = EditorLogHandler(sink)
    log.addHandler(handler)
    yield sink
    log.removeHandler(handler)


def test_a_record_whose_sending_fails_is_not_sent_again_and_again(
    channel: ClosedChannel, caplog: pytest.LogCaptureFixture
) -> None:
    log.error("the editor closed the connection")

    # one attempt; the failure it logged reaches the other handlers (stderr), not the editor
    assert channel.sent == ["server.lsp.test_logs: the editor closed the connection"]
    assert sorted(r.getMessage() for r in caplog.records) == [
        "JsonRpcInternalError: I/O operation on closed file",
        "the editor closed the connection",
    ]

    log.warning("the next record is sent as usual")
    assert len(channel.sent) == 2
