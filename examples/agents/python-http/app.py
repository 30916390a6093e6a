"""packing_agent: a Switchboard sub-agent speaking protocol `http` (docs/sub-agent-protocol.md).

POST /invoke with the supervisor's request body; answer 200 {"output": {...}, "message": "..."}.
A body that is not valid JSON or whose inputs are unusable gets a 4xx with
{"error": {"code", "message"}} at once (the supervisor never retries a 4xx).

    uvicorn app:app --port 9201
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from packing import is_chinese, packing_list, reply_text

app = FastAPI(title="packing_agent (protocol http)")


class Inputs(BaseModel):
    """`inputs`: already checked by the supervisor against the card's input schema."""

    message: str = ""
    city: str = Field(min_length=1)
    nights: int | None = Field(default=None, ge=1, le=30)


class Context(BaseModel):
    """`context.dependencies`: task id -> the accepted `output` of each sub-task this one waits on."""

    dependencies: dict[str, Any] = {}


class InvokeRequest(BaseModel):
    """The request body of every protocol."""

    task_id: str
    plan_id: str = ""
    session_id: str = ""
    user_id: str = ""
    thread_id: str = ""
    message: str = ""
    inputs: Inputs
    context: Context = Context()


def nights_of(req: InvokeRequest) -> int:
    """`inputs.nights`, else a `nights` an upstream sub-task produced (a hotel booking), else 3."""
    if req.inputs.nights is not None:
        return req.inputs.nights
    for output in req.context.dependencies.values():
        if isinstance(output, dict) and isinstance(output.get("nights"), int) and 1 <= output["nights"] <= 30:
            return output["nights"]
    return 3


@app.exception_handler(RequestValidationError)
async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
    """Malformed JSON is a 400, unusable inputs a 422; both say why."""
    errors = exc.errors()
    malformed = any(e.get("type") == "json_invalid" for e in errors)
    code, status = ("bad_request", 400) if malformed else ("invalid_inputs", 422)
    message = "; ".join(f"{'/'.join(map(str, e.get('loc', [])))}: {e.get('msg')}" for e in errors[:5])
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


@app.post("/invoke")
async def invoke(req: InvokeRequest) -> dict[str, Any]:
    """One sub-task. The supervisor sends a request once (it never re-sends one the agent may have
    received), so acting on first receipt is safe; `task_id` identifies the sub-task in logs."""
    nights = nights_of(req)
    items = packing_list(req.inputs.city, nights)
    return {
        "output": {"city": req.inputs.city, "nights": nights, "items": items},
        "message": reply_text(req.inputs.city, nights, items, is_chinese(req.message)),
    }


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    """For a load balancer or a Kubernetes probe."""
    return {"status": "ok"}
