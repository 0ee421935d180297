# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Mitogen's linear strategy for the Molecule scenarios, with Molecule's Docker connection.

A test-only speed-up (issue 24), not part of the collection: Molecule's docker driver names its connection by the
collection's name (community.docker.docker), and Mitogen replaces only the short names of the transports it knows
(docker). This module maps the one to the other, and leaves the controller's own tasks (the local connection:
Molecule's create and destroy, tasks delegated to localhost) to ansible-core: Mitogen's async_status reports
`finished` as 1, which ansible-core 2.21's `is finished` test does not take, so Molecule's destroy waited for ever.
Otherwise it is Mitogen's mitogen_linear.
"""

from __future__ import annotations

import ansible_mitogen.loaders
import ansible_mitogen.strategy

DOCKER_CONNECTION = "community.docker.docker"
UPSTREAM_GET = ansible_mitogen.strategy.wrap_connection_loader__get_with_context


def get_with_context(name, *args, **kwargs):
    """Mitogen's connection loader wrapper, with Molecule's Docker connection read as Mitogen's `docker`."""
    return UPSTREAM_GET("docker" if name == DOCKER_CONNECTION else name, *args, **kwargs)


# The play's connection (community.docker.docker) counts as one Mitogen redirects, the local one does not; the
# wrapper is looked up in the module when the strategy installs its wrappers, at the start of each run.
ansible_mitogen.strategy.REDIRECTED_CONNECTION_PLUGINS = (
    *(name for name in ansible_mitogen.strategy.REDIRECTED_CONNECTION_PLUGINS if name != "local"),
    DOCKER_CONNECTION,
)
ansible_mitogen.strategy.wrap_connection_loader__get_with_context = get_with_context

BASE = ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)


class StrategyModule(ansible_mitogen.strategy.StrategyMixin, BASE):
    """mitogen_linear, with Molecule's Docker connection."""
