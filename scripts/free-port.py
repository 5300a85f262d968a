#!/usr/bin/env python3
"""Print a loopback TCP port that nothing is bound to right now.

Picked below the kernel's ephemeral range (ip_local_port_range), so an
outgoing connection of some other process cannot take it between this check
and the caller's listen(); a port the kernel hands out for bind(0) or a random
pick inside that range can be taken that way (seen in CI: "Address already in
use" on a port a parallel test's client connection held).
"""
import random
import socket
import sys

LOWEST_PORT = 10000
ATTEMPTS_MAX = 500


def ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def main() -> int:
    highest = max(LOWEST_PORT + 1, ephemeral_low() - 1)
    for _ in range(ATTEMPTS_MAX):
        port = random.randint(LOWEST_PORT, highest)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        print(port)
        return 0
    print("free-port: no free loopback port below the ephemeral range", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
