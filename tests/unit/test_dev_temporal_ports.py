"""The dev server's ports are chosen where no ``bind(0)`` of its own services can land."""

from __future__ import annotations

import socket

from stackflow.cli.dev_temporal import ephemeral_port_range, free_ports


def test_the_ports_are_distinct_free_and_below_the_kernel_s_ephemeral_range() -> None:
    low, high = ephemeral_port_range()
    assert low <= high
    ports = free_ports("127.0.0.1", 4)
    assert len(set(ports)) == 4
    assert all(port < low for port in ports)
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
            server.bind(("127.0.0.1", port))


def test_a_port_in_use_is_never_offered() -> None:
    low, _ = ephemeral_port_range()
    taken = free_ports("127.0.0.1", 1)[0]
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", taken))
        holder.listen()
        for _ in range(20):
            assert taken not in free_ports("127.0.0.1", 4)
    assert taken < low
