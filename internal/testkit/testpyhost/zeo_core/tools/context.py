"""What a tool receives besides its request."""

import dataclasses
import logging
from typing import Any


@dataclasses.dataclass(frozen=True)
class ToolContext:
    run_id: str
    tool_name: str
    tool_version: str
    logger: logging.Logger
    work_dir: str
    services: dict[str, Any] = dataclasses.field(default_factory=dict)
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
