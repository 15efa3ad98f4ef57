"""The backend's warnings a bench script counts: satfuse logs, rather than raises, a graph it
runs eagerly ("no plan for the ... graph (...)"), and a planning failure among them is a satfuse
bug ("a satfuse bug")."""

from __future__ import annotations

import logging


class Seen(logging.Handler):
    """The warning messages of the ``satfuse`` loggers that contain ``marker``, while attached."""

    def __init__(self, marker: str) -> None:
        super().__init__(logging.WARNING)
        self.marker = marker
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if self.marker in msg:
            self.messages.append(msg)

    def __enter__(self) -> "Seen":
        logging.getLogger("satfuse").addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("satfuse").removeHandler(self)
