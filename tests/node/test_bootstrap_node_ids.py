"""The node ids a replica dials ``controller.quorum.bootstrap.servers`` by
(kraft/node/network_channel.py ``bootstrap_nodes``).

Kafka 4.0 and 4.1 number them -2, -3, ... in the configured order
(``KafkaRaftClient``'s constructor: ``new AtomicInteger(-2)``, then
``getAndDecrement`` per address): -1 stays "no node", as in a Fetch
response's leader id or ``quorum-state``'s ``leaderId``."""

from __future__ import annotations

from kraft.node.network_channel import AddressBook, bootstrap_nodes

SERVERS = [("c1", 9093), ("c2", 9093), ("c3", 9093)]


def test_bootstrap_servers_are_numbered_from_minus_two_in_order() -> None:
    assert bootstrap_nodes(SERVERS) == {-2: ("c1", 9093), -3: ("c2", 9093), -4: ("c3", 9093)}


def test_our_own_address_is_left_out_and_the_others_keep_their_ids() -> None:
    assert bootstrap_nodes(SERVERS, {("c2", 9093)}) == {-2: ("c1", 9093), -4: ("c3", 9093)}


def test_the_address_book_dials_a_bootstrap_id_and_knows_no_node_minus_one() -> None:
    book = AddressBook("CONTROLLER", {}, bootstrap_nodes(SERVERS))
    assert book.address_of(-2) == ("c1", 9093)
    assert book.address_of(-4) == ("c3", 9093)
    assert book.address_of(-1) is None
