# Copyright: inferops.llm contributors
# Apache License 2.0 (see LICENSE)
