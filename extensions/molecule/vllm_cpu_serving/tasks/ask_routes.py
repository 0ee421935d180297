"""Ask each route of a list without a key and print each answer's status (tasks/routes.yml).

One process for every request instead of one Ansible task per route (the scenario asks 42 routes: a task each
cost about a second on the 2-core CI machine). Reads {"base_url": ..., "routes": [{"method", "path"}, ...]} on stdin,
prints the same routes with "status" (-1 when the connection failed or timed out) as JSON.
"""

import json
import sys
import urllib.error
import urllib.request

BODY_METHODS = {"POST", "PUT", "PATCH"}


def ask(base_url: str, method: str, path: str) -> int:
    body = b"{}" if method in BODY_METHODS else None
    request = urllib.request.Request(base_url + path, data=body, method=method)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, OSError):
        return -1


def main() -> None:
    asked = json.load(sys.stdin)
    answers = [dict(route, status=ask(asked["base_url"], route["method"], route["path"])) for route in asked["routes"]]
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
