"""Loopback ports for the live set-ups' ZMQ publishers and control sockets.

A port from `bind(("127.0.0.1", 0))` is closed again before the engine binds it, and it lies in
the kernel's ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`, 32768-60999 by
default): every `bind(0)` and every outgoing `connect()` in between -- torch.distributed's
store, gloo's pairs, vLLM's own `get_open_port()`, the subscribers' retried connects -- draws
from that same range and can take it first. A CI run lost a KVCR campaign that way
(`zmq.error.ZMQError: Address already in use` in vLLM's publisher). Ports below the ephemeral
range are never handed out by the kernel, so a port picked there and found free stays free
unless another program asks for that very number.

    python -m kvlower_scripts.ports N      prints N distinct free ports, comma-separated

Standard library only.
"""

from __future__ import annotations

import random
import socket
import sys
from pathlib import Path

# Below the default ephemeral range, above the registered ports most services listen on.
LOW, HIGH = 20000, 32767


def _ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32768, 60999


def _free(port: int) -> bool:
    """Free on both the IPv4 loopback and its IPv4-mapped IPv6 form (vLLM's publisher binds
    `tcp://[::ffff:127.0.0.1]:P`)."""
    for family, addr in ((socket.AF_INET, ("127.0.0.1", port)),
                         (socket.AF_INET6, ("::ffff:127.0.0.1", port))):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.bind(addr)
        except OSError:
            return False
    return True


def loopback_ports(n: int) -> list[int]:
    """`n` distinct ports outside the kernel's ephemeral range, each free when picked."""
    lo_eph, hi_eph = _ephemeral_range()
    candidates = [p for p in range(LOW, HIGH + 1) if not lo_eph <= p <= hi_eph]
    random.SystemRandom().shuffle(candidates)
    picked: list[int] = []
    for port in candidates:
        if _free(port):
            picked.append(port)
            if len(picked) == n:
                return picked
    raise SystemExit(f"ports: no {n} free loopback ports in {LOW}-{HIGH} outside the ephemeral range")


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].isdigit() or int(argv[0]) < 1:
        print("usage: python -m kvlower_scripts.ports N", file=sys.stderr)
        return 2
    print(",".join(str(p) for p in loopback_ports(int(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
