# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
"""The attributes the collection's modules declare, described once; each module states its own support."""

from __future__ import annotations


class ModuleDocFragment:
    # Every module: the descriptions; the module sets support (and details where it has something to add).
    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
  diff_mode:
    description: Returns details on what has changed (or possibly needs changing in check_mode), when in diff mode.
  idempotent:
    description: When run twice in a row outside check mode, with the same arguments, the second invocation
      indicates no change.
"""

    # Modules whose action plugin does everything on the controller and writes reports there.
    CONTROLLER_REPORTS = r"""
attributes:
  action:
    description: Runs as an action plugin on the controller.
    support: full
    details: Everything happens in the action plugin; no module is sent to any host.
  check_mode:
    support: full
    details: The reports are written in check mode too; they only touch the controller.
  diff_mode:
    support: none
  idempotent:
    support: full
  platform:
    description: Target platforms.
    platforms: posix
    support: full
    details: Writes to the controller's file system.
"""
