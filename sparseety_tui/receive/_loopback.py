"""Whether a listening address stays on this machine (the receivers' and serve's default)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only: ``localhost`` or a 127.0.0.0/8 or ::1
    address. Any other name could resolve anywhere, so it counts as remote."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
