"""What kraft says it is in its ApiVersions requests (v3+, KIP-511):
``ClientSoftwareName`` and ``ClientSoftwareVersion``.

Its own module so the sans-IO raft core, which sends ApiVersions to a
would-be voter, can name them without importing :mod:`kraft.wire.network_client`
(and with it trio, sockets and TLS).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _package_version

__all__ = ["CLIENT_SOFTWARE_NAME", "CLIENT_SOFTWARE_VERSION", "CONTROLLER_CHANNEL_SOFTWARE_NAME"]

#: Kafka checks both against ``[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?``
#: (``ApiVersionsRequest.isValid``).
CLIENT_SOFTWARE_NAME = "kraft"
#: The name on a kraft controller's channel to the active controller (its
#: ControllerRegistration). A kraft node tells a raft peer (``kraft``) only
#: the raft APIs, so that no raft peer takes it for a Kafka controller
#: (kraft/raft/witness_policy.py); on this channel it answers as the Kafka
#: controller it runs, advertising the controller RPCs.
CONTROLLER_CHANNEL_SOFTWARE_NAME = "kraft-controller-channel"
try:
    CLIENT_SOFTWARE_VERSION = _package_version("kraft")
except PackageNotFoundError:  # running from a source tree without an install
    CLIENT_SOFTWARE_VERSION = "unknown"
