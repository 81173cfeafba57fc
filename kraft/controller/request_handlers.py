"""Which control manager answers which request: the table of
:data:`~kraft.controller.quorum_controller.Handler` functions the active
controller dispatches on (Kafka's ``ControllerApis`` handing each request to
a ``QuorumController`` method).

Each entry adapts one control-manager function (pure: image and request in,
records and response out) to the handler signature. What a handler reads
besides the request comes from the :class:`RequestContext`: the active
image, the settings, the broker sessions, the next offset and the
randomness (topic ids, ACL ids), so the same requests against the same
state give the same records.
"""

from __future__ import annotations

import uuid
from typing import Any

from kraft.controller import (
    acls,
    configs,
    controller_unregistration,
    directory_assignment,
    elections,
    feature_control,
    quotas,
    reassignments,
    replication_control,
    scram_control,
)
from kraft.controller.quorum_controller import Handler, RequestContext, broker_handlers
from kraft.controller.result import ApiError, ControllerResult
from kraft.wire.apis import ApiKey
from kraft.wire.errors import ErrorCode

__all__ = ["controller_handlers", "WRITE_APIS"]


def _random_uuid(ctx: RequestContext) -> uuid.UUID:
    """A version-4 UUID from the context's randomness (Kafka's ``Uuid.randomUuid``)."""
    return uuid.UUID(int=ctx.rng.getrandbits(128), version=4)


def _create_topics(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return replication_control.create_topics(ctx.image, ctx.settings, body, version, rng=ctx.rng)


def _delete_topics(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return replication_control.delete_topics(ctx.image, ctx.settings, body, version)


def _create_partitions(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return replication_control.create_partitions(ctx.image, ctx.settings, body, version, rng=ctx.rng)


def _alter_partition(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return replication_control.alter_partition(ctx.image, ctx.settings, body, version)


def _elect_leaders(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return elections.elect_leaders(ctx.image, ctx.settings, body, version)


def _alter_reassignments(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return reassignments.alter_partition_reassignments(ctx.image, ctx.settings, body, version)


def _list_reassignments(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return ControllerResult((), reassignments.list_partition_reassignments(ctx.image, body, version))


def _incremental_alter_configs(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return configs.incremental_alter_configs(ctx.image, ctx.settings, body, version)


def _alter_configs(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return configs.alter_configs(ctx.image, ctx.settings, body, version)


def _create_acls(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return acls.create_acls(ctx.image, body, version, new_id=lambda: _random_uuid(ctx), settings=ctx.settings)


def _delete_acls(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return acls.delete_acls(ctx.image, body, version, settings=ctx.settings)


def _alter_scram(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return scram_control.alter_user_scram_credentials(ctx.image, body, version)


def _alter_quotas(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return quotas.alter_client_quotas(ctx.image, body, version)


def _update_features(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    """``QuorumController.updateFeatures`` for the features the controller
    finalizes, bounded by what every registered controller supports and
    refused while a static voter has not registered, as Kafka's
    ``FeatureControlManager.reasonNotSupported`` (a Kafka controller beside
    kraft's supports less than kraft's may). ``kraft.version`` is the raft
    layer's and goes to the raft leader (the node routes such a request there)."""
    registered = {i: {f.name: (f.min_version, f.max_version) for f in r.supported_features}
                  for i, r in ctx.image.controllers.items()}
    result = feature_control.update_features(
        ctx.image, ctx.settings, body, version,
        quorum_supported={**registered, ctx.settings.node_id: feature_control.controller_supported_features()},
        kraft_version=0, voter_ids=ctx.settings.quorum_node_ids)
    if isinstance(result, feature_control.KraftVersionUpgrade):
        raise ApiError(ErrorCode.INVALID_REQUEST, "a kraft.version upgrade goes to the raft quorum with the other "
                       "features left out: kafka-features.sh --bootstrap-controller HOST:PORT upgrade "
                       "--feature kraft.version=1")
    return result


def _unregister_controller(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return controller_unregistration.unregister_controller(ctx.image, ctx.settings.node_id, body)


def _assign_replicas_to_dirs(ctx: RequestContext, body: Any, version: int) -> ControllerResult[Any]:
    return directory_assignment.assign_replicas_to_dirs(ctx.image, ctx.settings, body, version)


#: The requests the active controller turns into records (api key -> handler),
#: besides the broker RPCs of :func:`broker_handlers`.
_ADMIN: dict[int, Handler] = {
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.ALTER_PARTITION: _alter_partition,
    ApiKey.ELECT_LEADERS: _elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _alter_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _list_reassignments,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _incremental_alter_configs,
    ApiKey.ALTER_CONFIGS: _alter_configs,
    ApiKey.CREATE_ACLS: _create_acls,
    ApiKey.DELETE_ACLS: _delete_acls,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_scram,
    ApiKey.ALTER_CLIENT_QUOTAS: _alter_quotas,
    ApiKey.ASSIGN_REPLICAS_TO_DIRS: _assign_replicas_to_dirs,
    ApiKey.UPDATE_FEATURES: _update_features,
    ApiKey.UNREGISTER_CONTROLLER: _unregister_controller,
}


def controller_handlers() -> dict[int, Handler]:
    """Every request the active controller answers, by api key."""
    return {**broker_handlers(), **_ADMIN}


#: The api keys of :func:`controller_handlers`.
WRITE_APIS: frozenset[int] = frozenset(controller_handlers())
