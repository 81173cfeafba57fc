"""An independent chaos client: the load and its history from a process of
its own that talks to the quorum over the wire, as Kafka's admin client
talks to the controllers (``--bootstrap-controller``).

It shares no code with the node beyond the protocol: it imports the
generated codecs (``kraft.messages``), the wire's framing and codec
modules, and the standard library (the import-linter contract
``chaos-client-independent`` in pyproject.toml holds it to that).

Each operation is one AlterClientQuotas request setting
``producer_byte_rate`` for the client id ``<prefix>-<seq>``. Not
CreateTopics: with no broker registered the controller refuses every
topic (``ReplicationControlManager.createTopic`` places replicas on usable
brokers only, INVALID_REPLICATION_FACTOR; a manual assignment names
registered, unfenced brokers), and the chaos quorum has no brokers.
AlterClientQuotas needs none, and the controller answers it only once its
ClientQuotaRecord is committed (``ClientQuotaControlManager``), and writes
no record for a value the entity already has, so a retry of an applied
operation adds nothing: two records for one client id are one operation
applied twice.

The history is :mod:`.operations`' JSON lines, written and flushed before
each request and after each outcome (a kill -9 of the client loses
nothing)::

    {"type": "invoke", "f": "alter-client-quotas", "value": "chaos-7", "t": ...}
    {"type": "ok", "f": "alter-client-quotas", "value": "chaos-7", "controller": "127.0.0.1:9093", ...}

An operation is tried on every bootstrap address in turn until one
answers as the active controller, within ``--op-timeout`` seconds:

* ``ok``: an answer with error 0;
* ``fail``: certainly not applied -- no attempt reached a node (every
  connection refused) or the active controller refused it (an error code
  other than NOT_CONTROLLER and REQUEST_TIMED_OUT, found while validating,
  before any append), and no other attempt's outcome is unknown;
* ``info``: unknown -- a timeout, a dropped connection, or NOT_CONTROLLER,
  which a leader that lost its leadership with the append pending answers
  too (the record may be committed by the next leader).
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from kraft.messages.generated import alter_client_quotas_request as acq
from kraft.messages.generated.alter_client_quotas_response import AlterClientQuotasResponse
from kraft.wire.codec import decode_response, encode_request
from kraft.wire.framing import FrameReader

__all__ = ["QUOTA_KEY", "OPERATION", "QuotaLoad", "main", "quota_request"]

#: The quota each operation sets (a LONG quota: whole numbers only).
QUOTA_KEY = "producer_byte_rate"
OPERATION = "alter-client-quotas"
#: ``Errors``: NOT_CONTROLLER and REQUEST_TIMED_OUT leave the outcome unknown.
NOT_CONTROLLER, REQUEST_TIMED_OUT = 41, 7
_UNKNOWN_ERRORS = {NOT_CONTROLLER, REQUEST_TIMED_OUT}
ALTER_CLIENT_QUOTAS_VERSION = 1


def quota_request(client_id: str, value: float) -> acq.AlterClientQuotasRequest:
    entity = acq.EntityData(entity_type="client-id", entity_name=client_id)
    op = acq.OpData(key=QUOTA_KEY, value=value, remove=False)
    return acq.AlterClientQuotasRequest(entries=[acq.EntryData(entity=[entity], ops=[op])], validate_only=False)


class _Unknown(Exception):
    """The request may have been applied (sent, and no answer that says)."""


class _NotSent(Exception):
    """No byte of the request reached the node."""


class QuotaLoad:
    """The load: one operation at a time, the history as it goes."""

    def __init__(self, bootstrap: Sequence[tuple[str, int]], history: IO[str], *, prefix: str,
                 request_timeout_s: float, op_timeout_s: float) -> None:
        self.bootstrap = list(bootstrap)
        self.history = history
        self.prefix = prefix
        self.request_timeout_s = request_timeout_s
        self.op_timeout_s = op_timeout_s
        self.sockets: dict[int, socket.socket] = {}
        self.controller = 0  # index into bootstrap of the last active controller
        self.correlation_id = 0
        self.counts = {"invoke": 0, "ok": 0, "fail": 0, "info": 0}

    def _write(self, kind: str, value: str, **extra: Any) -> None:
        self.counts[kind] += 1
        line = json.dumps({"type": kind, "f": OPERATION, "value": value, "t": round(time.time(), 3), **extra})
        self.history.write(line + "\n")
        self.history.flush()

    def _close(self, index: int) -> None:
        sock = self.sockets.pop(index, None)
        if sock is not None:
            sock.close()

    def _connection(self, index: int) -> socket.socket:
        sock = self.sockets.get(index)
        if sock is None:
            try:
                sock = socket.create_connection(self.bootstrap[index], timeout=self.request_timeout_s)
            except OSError as e:
                raise _NotSent(f"connect: {e}") from None
            self.sockets[index] = sock
        return sock

    def _ask(self, index: int, body: acq.AlterClientQuotasRequest) -> AlterClientQuotasResponse:
        sock = self._connection(index)
        self.correlation_id += 1
        frame = b"".join(bytes(p) for p in encode_request(body, ALTER_CLIENT_QUOTAS_VERSION, self.correlation_id,
                                                          "kraft-chaos-client"))
        try:
            sock.sendall(frame)
            reader = FrameReader()
            while (payload := reader.next_frame()) is None:
                data = sock.recv(65536)
                if not data:
                    raise _Unknown("the connection closed before the answer")
                reader.feed(data)
        except OSError as e:
            self._close(index)
            raise _Unknown(f"{type(e).__name__}: {e}") from None
        decoded = decode_response(payload, body.API_KEY or 0, ALTER_CLIENT_QUOTAS_VERSION)
        if decoded.header.correlation_id != self.correlation_id:
            self._close(index)
            raise _Unknown(f"correlation id {decoded.header.correlation_id}, sent {self.correlation_id}")
        response: AlterClientQuotasResponse = decoded.body
        return response

    def operate(self, seq: int) -> str:
        """One operation from invocation to outcome; its outcome's type."""
        value = f"{self.prefix}-{seq}"
        body = quota_request(value, float(seq + 1))
        self._write("invoke", value)
        deadline = time.monotonic() + self.op_timeout_s
        unknown: list[str] = []
        refused: list[str] = []
        while time.monotonic() < deadline:
            for step in range(len(self.bootstrap)):
                index = (self.controller + step) % len(self.bootstrap)
                where = "%s:%d" % self.bootstrap[index]
                try:
                    response = self._ask(index, body)
                except _NotSent as e:
                    refused.append(f"{where}: {e}")
                    continue
                except _Unknown as e:
                    unknown.append(f"{where}: {e}")
                    continue
                # One entry asked, one answered (NOT_CONTROLLER too is said per entry).
                code = response.entries[0].error_code if response.entries else -1
                if code == 0:
                    self.controller = index
                    self._write("ok", value, controller=where, attempts=len(unknown) + len(refused) + 1)
                    return "ok"
                message = f"{where}: error {code} {response.entries[0].error_message if response.entries else ''}"
                if code in _UNKNOWN_ERRORS:
                    unknown.append(message)
                    continue
                self.controller = index
                refused.append(message)
                if not unknown:
                    self._write("fail", value, error=message)
                    return "fail"
                break
            time.sleep(0.1)
        kind = "info" if unknown else "fail"
        self._write(kind, value, error="; ".join((unknown or refused)[-3:]))
        return kind

    def close(self) -> None:
        for index in list(self.sockets):
            self._close(index)


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.strip().rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not host:port")
    return host.strip("[]"), int(port)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m kraft.tools.bench.chaos_client",
                                description="The chaos load as a client of its own: AlterClientQuotas to the "
                                            "active controller, one operation at a time, and its history.")
    p.add_argument("--bootstrap-controller", required=True, metavar="HOST:PORT,...",
                   help="the controllers' listener addresses, as Kafka's admin client takes them")
    p.add_argument("--history", required=True, type=Path, help="the JSON-lines history to append to")
    p.add_argument("--rate", type=float, default=20.0, help="operations a second at most (default 20)")
    p.add_argument("--operations", type=int, default=0, help="stop after this many (default 0: until --duration)")
    p.add_argument("--duration", type=float, default=0.0, help="stop after this many seconds (0: never)")
    p.add_argument("--prefix", default="chaos", help="client ids are PREFIX-SEQ (default chaos)")
    p.add_argument("--request-timeout", type=float, default=5.0, help="seconds one request may take")
    p.add_argument("--op-timeout", type=float, default=15.0, help="seconds one operation may take, retries included")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        bootstrap = [_address(a) for a in args.bootstrap_controller.split(",") if a.strip()]
    except argparse.ArgumentTypeError as e:
        print(f"chaos client: --bootstrap-controller: {e}; give host:port,...", file=sys.stderr)
        return 2
    if not bootstrap or args.rate <= 0:
        print("chaos client: give --bootstrap-controller host:port and a --rate above 0", file=sys.stderr)
        return 2
    start = time.monotonic()
    with args.history.open("a", encoding="utf-8", buffering=1) as history:
        load = QuotaLoad(bootstrap, history, prefix=args.prefix, request_timeout_s=args.request_timeout,
                         op_timeout_s=args.op_timeout)
        seq = 0
        try:
            while not (args.operations and seq >= args.operations) and not (
                    args.duration and time.monotonic() - start >= args.duration):
                began = time.monotonic()
                load.operate(seq)
                seq += 1
                time.sleep(max(0.0, 1.0 / args.rate - (time.monotonic() - began)))
        except KeyboardInterrupt:
            pass
        finally:
            load.close()
    counts = load.counts
    print(f"chaos client: {counts['invoke']} invoked, {counts['ok']} ok, {counts['fail']} fail, "
          f"{counts['info']} info")
    return 0


if __name__ == "__main__":
    sys.exit(main())
