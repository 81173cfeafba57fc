"""NOT_CONTROLLER answers to the admin RPCs a Kafka admin client sends
straight to a controller (``--bootstrap-controller``, KIP-919): CreateTopics,
DeleteTopics, CreatePartitions, the config, ACL, quota, SCRAM, reassignment
and delegation-token RPCs, and the broker-to-controller ones a Kafka 4.0
controller also advertises (AlterPartition, UnregisterBroker,
AssignReplicasToDirs).

kraft is never a Kafka controller, so it answers them as a Kafka controller
that is not the active one: Kafka's ``ControllerApis`` turns the
``NotControllerException`` into the request class's ``getErrorResponse``,
which puts the error on every item the request named (each topic of a
CreateTopicsRequest, each resource of an AlterConfigsRequest, ...) and on
the top-level ErrorCode where the response has one. The admin client then
re-resolves the controller and retries (``KafkaAdminClient`` treats
NOT_CONTROLLER as retriable after a metadata refresh).

The request is decoded (kraft/messages/generated, written from Kafka's
specs for the versions a Kafka 4.0 controller advertises) so the answer can
mirror its items.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraft.messages.generated import (
    alter_client_quotas_response as acq,
    alter_configs_response as ac,
    alter_partition_reassignments_response as apr,
    alter_user_scram_credentials_response as ausc,
    create_acls_response as cacl,
    create_partitions_response as cp,
    create_topics_response as ct,
    delete_acls_response as dacl,
    delete_topics_response as dt,
    describe_configs_response as dc,
    elect_leaders_response as el,
    incremental_alter_configs_response as iac,
)
from kraft.messages.registry import response_class

__all__ = ["NOT_CONTROLLER", "NOT_CONTROLLER_MESSAGE", "ADMIN_NOT_CONTROLLER_APIS", "admin_not_controller_response",
           "error_response"]

#: Kafka's ``Errors.NOT_CONTROLLER`` and its default message.
NOT_CONTROLLER = 41
NOT_CONTROLLER_MESSAGE = "This is not the correct controller for this cluster."

#: api key -> Kafka's name: the RPCs a Kafka 4.0 controller advertises that
#: kraft answers here (the versions are those of the generated codecs, the
#: 4.0 controller's ranges).
ADMIN_NOT_CONTROLLER_APIS: dict[int, str] = {
    19: "CreateTopics",
    20: "DeleteTopics",
    29: "DescribeAcls",
    30: "CreateAcls",
    31: "DeleteAcls",
    32: "DescribeConfigs",
    33: "AlterConfigs",
    37: "CreatePartitions",
    38: "CreateDelegationToken",
    39: "RenewDelegationToken",
    40: "ExpireDelegationToken",
    41: "DescribeDelegationToken",
    43: "ElectLeaders",
    44: "IncrementalAlterConfigs",
    45: "AlterPartitionReassignments",
    46: "ListPartitionReassignments",
    49: "AlterClientQuotas",
    50: "DescribeUserScramCredentials",
    51: "AlterUserScramCredentials",
    56: "AlterPartition",
    64: "UnregisterBroker",
    73: "AssignReplicasToDirs",
}


def _create_topics(req: Any, version: int, error: int, message: str | None) -> Any:  # CreateTopicsRequest.getErrorResponse
    return ct.CreateTopicsResponse(topics=[
        ct.CreatableTopicResult(name=t.name, error_code=error, error_message=message) for t in req.topics])


def _delete_topics(req: Any, version: int, error: int, message: str | None) -> Any:  # DeleteTopicsRequest.getErrorResponse: names (v1-5) or topic states (v6)
    items = [(t.name, t.topic_id) for t in req.topics] or [(n, None) for n in req.topic_names]
    results = []
    for name, topic_id in items:
        result = dt.DeletableTopicResult(name=name, error_code=error)  # no message, as Kafka
        if topic_id is not None:
            result.topic_id = topic_id
        results.append(result)
    return dt.DeleteTopicsResponse(responses=results)


def _create_partitions(req: Any, version: int, error: int, message: str | None) -> Any:  # CreatePartitionsRequest.getErrorResponse
    return cp.CreatePartitionsResponse(results=[
        cp.CreatePartitionsTopicResult(name=t.name, error_code=error, error_message=message) for t in req.topics])


def _elect_leaders(req: Any, version: int, error: int, message: str | None) -> Any:
    # ElectLeadersRequest.getErrorResponse: every partition, and the top level
    # from v1 (ElectLeadersResponse's constructor leaves it out of v0).
    return el.ElectLeadersResponse(error_code=error if version >= 1 else 0, replica_election_results=[
        el.ReplicaElectionResult(topic=t.topic, partition_result=[
            el.PartitionResult(partition_id=p, error_code=error, error_message=message) for p in t.partitions])
        for t in (req.topic_partitions or [])])


def _incremental_alter_configs(req: Any, version: int, error: int, message: str | None) -> Any:  # IncrementalAlterConfigsRequest.getErrorResponse
    return iac.IncrementalAlterConfigsResponse(responses=[
        iac.AlterConfigsResourceResponse(error_code=error, error_message=message, resource_type=r.resource_type,
                                         resource_name=r.resource_name) for r in req.resources])


def _alter_configs(req: Any, version: int, error: int, message: str | None) -> Any:  # AlterConfigsRequest.getErrorResponse
    return ac.AlterConfigsResponse(responses=[
        ac.AlterConfigsResourceResponse(error_code=error, error_message=message, resource_type=r.resource_type,
                                        resource_name=r.resource_name) for r in req.resources])


def _describe_configs(req: Any, version: int, error: int, message: str | None) -> Any:  # DescribeConfigsRequest.getErrorResponse
    return dc.DescribeConfigsResponse(results=[
        dc.DescribeConfigsResult(error_code=error, error_message=message, resource_type=r.resource_type,
                                 resource_name=r.resource_name) for r in req.resources])


def _create_acls(req: Any, version: int, error: int, message: str | None) -> Any:  # CreateAclsRequest.getErrorResponse: one result per creation
    return cacl.CreateAclsResponse(results=[
        cacl.AclCreationResult(error_code=error, error_message=message) for _ in req.creations])


def _delete_acls(req: Any, version: int, error: int, message: str | None) -> Any:  # DeleteAclsRequest.getErrorResponse: one result per filter
    return dacl.DeleteAclsResponse(filter_results=[
        dacl.DeleteAclsFilterResult(error_code=error, error_message=message) for _ in req.filters])


def _alter_client_quotas(req: Any, version: int, error: int, message: str | None) -> Any:  # AlterClientQuotasRequest.getErrorResponse
    return acq.AlterClientQuotasResponse(entries=[
        acq.EntryData(error_code=error, error_message=message, entity=[
            acq.EntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity])
        for entry in req.entries])


def _alter_user_scram_credentials(req: Any, version: int, error: int, message: str | None) -> Any:  # AlterUserScramCredentialsRequest.getErrorResponse
    users = dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions])
    return ausc.AlterUserScramCredentialsResponse(results=[
        ausc.AlterUserScramCredentialsResult(user=user, error_code=error, error_message=message) for user in users])


def _alter_partition_reassignments(req: Any, version: int, error: int, message: str | None) -> Any:  # AlterPartitionReassignmentsRequest.getErrorResponse
    return apr.AlterPartitionReassignmentsResponse(error_code=error, error_message=message, responses=[
        apr.ReassignableTopicResponse(name=t.name, partitions=[
            apr.ReassignablePartitionResponse(partition_index=p.partition_index, error_code=error, error_message=message)
            for p in t.partitions]) for t in req.topics])


_BY_ITEM: dict[int, Callable[[Any, int, int, str | None], Any]] = {
    19: _create_topics,
    20: _delete_topics,
    33: _alter_configs,
    32: _describe_configs,
    30: _create_acls,
    31: _delete_acls,
    37: _create_partitions,
    43: _elect_leaders,
    44: _incremental_alter_configs,
    45: _alter_partition_reassignments,
    49: _alter_client_quotas,
    51: _alter_user_scram_credentials,
}


def admin_not_controller_response(api_key: int, version: int, request: Any) -> Any:
    """The response body Kafka's ``ControllerApis`` sends for ``request``
    (a decoded request of ``api_key`` at ``version``) on a controller that is not active
    (:func:`error_response` with NOT_CONTROLLER)."""
    return error_response(api_key, version, request, NOT_CONTROLLER, NOT_CONTROLLER_MESSAGE)


def error_response(api_key: int, version: int, request: Any, error: int, message: str | None) -> Any:
    """Kafka's ``AbstractRequest.getErrorResponse``: ``error`` (and
    ``message``) on every item the request named and on the top-level
    ErrorCode where the response has one. The APIs without items
    (DescribeAcls, ListPartitionReassignments, the delegation-token RPCs,
    DescribeUserScramCredentials, AlterPartition, UnregisterBroker,
    AssignReplicasToDirs, the broker-to-controller RPCs) carry one top-level
    ErrorCode (and ErrorMessage where the response has one)."""
    build = _BY_ITEM.get(api_key)
    if build is not None:
        return build(request, version, error, message)
    cls: Any = response_class(api_key)
    fields: dict[str, Any] = {"error_code": error}
    if "error_message" in cls.__slots__:
        fields["error_message"] = message
    return cls(**fields)
