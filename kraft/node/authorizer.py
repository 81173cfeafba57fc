"""Authorization on a kraft controller: minimal, and exactly this.

Enforced:

* When any listener of the node is SSL, SASL_PLAINTEXT or SASL_SSL (the
  node is *secured*), the requests that change the quorum -- AddRaftVoter,
  RemoveRaftVoter, UpdateRaftVoter and UpdateFeatures (the ``kraft.version``
  upgrade); ``kraft quorum add-controller``, ``remove-controller`` and
  ``reassign`` are made of these -- are served only for a principal listed in
  ``super.users``, on every listener (a PLAINTEXT connection is
  ``User:ANONYMOUS`` and is refused unless that is listed). Anyone else gets
  ``CLUSTER_AUTHORIZATION_FAILED`` in the response, with a log line.
  A node that auto-joins (``controller.quorum.auto.join.enable``) or updates
  its endpoints sends these itself: its own principal must be a super user.

Not enforced (open to any client that connected and, on a SASL listener,
authenticated), as on a Kafka controller without an authorizer:

* the raft RPCs between voters (Vote, BeginQuorumEpoch, EndQuorumEpoch,
  Fetch, FetchSnapshot) -- so any authenticated client can fetch the
  metadata log; restrict who can authenticate;
* the admin reads: ApiVersions, Metadata, DescribeCluster, DescribeQuorum.

There are no ACLs, no ``authorizer.class.name``, no per-resource checks.
With every listener PLAINTEXT nothing is enforced. Every admin request
(the reads above and the quorum changes) is logged with its principal.
"""

from __future__ import annotations

import logging
from typing import Any

from kraft.wire.apis import ApiKey
from kraft.wire.errors import ErrorCode
from kraft.wire.rate_limited_log import RateLimitedLog
from kraft.wire.server import ConnectionInfo, Response

__all__ = ["QUORUM_CHANGING_APIS", "ADMIN_APIS", "authorize", "denied_response"]

log = logging.getLogger("kraft.node.authorizer")
_denials = RateLimitedLog(log)

QUORUM_CHANGING_APIS = frozenset({ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER, ApiKey.UPDATE_RAFT_VOTER,
                                  ApiKey.UPDATE_FEATURES})
#: What gets a log line with its principal.
ADMIN_APIS = QUORUM_CHANGING_APIS | frozenset({ApiKey.METADATA, ApiKey.DESCRIBE_QUORUM, ApiKey.DESCRIBE_CLUSTER})

_MESSAGE = "Cluster authorization failed."


def authorize(secured: bool, super_users: frozenset[str], api_key: int, version: int,
              conn: ConnectionInfo) -> Response | None:
    """None when the request may be served; else the refusal to send."""
    if api_key not in ADMIN_APIS:
        return None
    key = ApiKey(api_key)
    allowed = not secured or key not in QUORUM_CHANGING_APIS or conn.principal in super_users
    if allowed:
        # Per request: DEBUG (INFO is for state changes).
        log.debug("%s v%d from %s as %s", key.display_name, version, conn, conn.principal)
        return None
    # A refusal is worth an operator's eye, once a minute per principal and API.
    _denials.log(logging.INFO, (conn.principal, key), "%s v%d from %s as %s: denied, not a super user "
                 "(CLUSTER_AUTHORIZATION_FAILED)", key.display_name, version, conn, conn.principal)
    return denied_response(key, version)


def denied_response(key: ApiKey, version: int) -> Response:
    cls: Any = key.response_class
    fields: dict[str, Any] = {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
    if "error_message" in cls.__slots__:
        fields["error_message"] = _MESSAGE
    return Response(cls(**fields), version)
