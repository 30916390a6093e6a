"""packing_agent: a Switchboard sub-agent speaking protocol `sse` (docs/sub-agent-protocol.md).

POST /invoke with the supervisor's request body and `Accept: text/event-stream`; answer 200
`text/event-stream` with `delta` events ({"text": ...}, shown to the user at once), then exactly
one `result` event (the `http` reply body {"output", "message"}), or one `error` event
({"message": ...}). A body that is not valid JSON or whose inputs are unusable gets a 4xx at once,
before any stream starts.

    uvicorn app:app --port 9202
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field

from packing import is_chinese, packing_list, reply_text

app = FastAPI(title="packing_agent (protocol sse)")

# Pause between progress events (a real agent is doing work here).
STEP_SECONDS = 0.05


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


def event(name: str, data: Any) -> str:
    """One SSE event: `event:` line, one `data:` line of compact JSON (UTF-8), blank line.
    Keep each event's data under 1 MiB and the whole stream under 8 MiB."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def nights_of(req: InvokeRequest) -> int:
    """`inputs.nights`, else a `nights` an upstream sub-task produced (a hotel booking), else 3."""
    if req.inputs.nights is not None:
        return req.inputs.nights
    for output in req.context.dependencies.values():
        if isinstance(output, dict) and isinstance(output.get("nights"), int) and 1 <= output["nights"] <= 30:
            return output["nights"]
    return 3


async def run(req: InvokeRequest) -> AsyncIterator[str]:
    """The stream: progress deltas, then the result. An exception becomes an `error` event."""
    chinese = is_chinese(req.message)
    try:
        city, nights = req.inputs.city, nights_of(req)
        yield event("delta", {"text": f"正在查看{city}的天气…" if chinese else f"Checking the weather in {city}…"})
        await asyncio.sleep(STEP_SECONDS)
        items = packing_list(city, nights)
        yield event("delta", {"text": f"已列出 {len(items)} 件物品。" if chinese else f"Listed {len(items)} items."})
        await asyncio.sleep(STEP_SECONDS)
        output = {"city": city, "nights": nights, "items": items}
        yield event("result", {"output": output, "message": reply_text(city, nights, items, chinese)})
    except Exception as exc:  # noqa: BLE001 - the supervisor shows a generic reason; log the detail
        yield event("error", {"message": f"packing list failed: {exc}"})


@app.exception_handler(RequestValidationError)
async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
    """Malformed JSON is a 400, unusable inputs a 422; both say why, before any stream."""
    errors = exc.errors()
    malformed = any(e.get("type") == "json_invalid" for e in errors)
    code, status = ("bad_request", 400) if malformed else ("invalid_inputs", 422)
    message = "; ".join(f"{'/'.join(map(str, e.get('loc', [])))}: {e.get('msg')}" for e in errors[:5])
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


@app.post("/invoke")
async def invoke(req: InvokeRequest) -> StreamingResponse:
    """One sub-task. The supervisor sends a request once and never retries after a delta reached
    the user, so acting on first receipt is safe."""
    return StreamingResponse(
        run(req),
        media_type="text/event-stream",
        headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
    )


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    """For a load balancer or a Kubernetes probe."""
    return {"status": "ok"}
