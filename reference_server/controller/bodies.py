"""The base of the controller's request bodies: JSON types taken as they are, as the chat API takes them.

In lax mode pydantic turns "0.5" and true into a temperature and 1 into `is_superadmin: true`; strict, it takes a
JSON number for a number (an integer too), a JSON boolean for a boolean, a JSON string for a string, and for an
integer a JSON number without a fraction (`5.0` too: JSON Schema's `integer`, which the contract documents, is the
number's value, not its spelling; JsonInt). Unknown members
stay ignored, as gns3-server ignores them. Before any field is read, the body must be JSON this server can take
(json_input.py): a lone surrogate would otherwise reach SQLite, Argon2 or Fernet, which cannot encode it. That
refusal is pydantic's `json_invalid` error, which errors.py answers 400 invalid_json, after authentication (FastAPI
validates bodies after the route's dependencies).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

from reference_server.json_input import json_problem


def _integral(value: Any) -> Any:
    """A float without a fraction is the integer it spells (strict mode refuses `5.0` for an int otherwise)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


JsonInt = Annotated[int, BeforeValidator(_integral)]


class StrictBody(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _takeable_json(cls, data: Any) -> Any:
        if (problem := json_problem(data)) is not None:
            raise PydanticCustomError("json_invalid", problem)
        return data
