#!/usr/bin/env python3
"""Call an A2A endpoint with the real a2a-sdk client.

    python a2a_client_check.py URL "text" [--data '{"destination":"Japan"}']
                               [--no-stream | --no-blocking] [--follow-up '{"nationality":"Chinese"}']
                               [--cancel-after SECONDS]

URL is the agent's base URL: the Agent Card is fetched from
URL/.well-known/agent-card.json and the call goes to the card's
supportedInterfaces[].url (JSON-RPC binding, protocol version 1.0).

By default it sends the message twice: once streaming (SendStreamingMessage)
and once non-streaming (SendMessage). Each received event is printed as one
JSON line on stdout: {"call": "stream"|"send"|..., "kind": "task"|"message"|
"statusUpdate"|"artifactUpdate", "event": <proto JSON as on the wire>}.

Exit code: 0 if every call ended in a terminal task state (COMPLETED, FAILED,
CANCELED, REJECTED) or with a Message; 2 if a call ended in INPUT_REQUIRED /
AUTH_REQUIRED (an interrupted state; use --follow-up to answer it);
1 on any error or a stream that ended without a terminal/interrupted state.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid

import httpx
from google.protobuf.json_format import MessageToDict, ParseDict

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from google.protobuf import struct_pb2

TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}
WIRE_KIND = {"status_update": "statusUpdate", "artifact_update": "artifactUpdate"}
INTERRUPTED = {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}


def emit(obj: dict) -> None:
    print(json.dumps(obj, ensure_ascii=False), flush=True)


def build_message(text: str, data: dict | None, task_id: str = "", context_id: str = "") -> Message:
    parts = []
    if text:
        parts.append(Part(text=text))
    if data is not None:
        v = struct_pb2.Value()
        ParseDict(data, v)
        parts.append(Part(data=v))
    msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=parts)
    if task_id:
        msg.task_id = task_id
    if context_id:
        msg.context_id = context_id
    return msg


async def run_call(client, label: str, msg: Message, cancel_after: float | None) -> tuple[str, str, str, str]:
    """Send one message; returns (outcome, last_state_name, task_id, context_id)."""
    state = TaskState.TASK_STATE_UNSPECIFIED
    task_id = context_id = ""
    got_message = False
    cancel_task: asyncio.Task | None = None

    async def do_cancel(tid: str) -> None:
        await asyncio.sleep(cancel_after or 0)
        t = await client.cancel_task(CancelTaskRequest(id=tid))
        emit({"call": label, "kind": "cancelTaskResult",
              "event": MessageToDict(t, preserving_proto_field_name=False)})

    async for resp in client.send_message(SendMessageRequest(message=msg)):
        field = resp.WhichOneof("payload")  # proto name: task|message|status_update|artifact_update
        kind = WIRE_KIND.get(field, field)  # wire (JSON) name: statusUpdate, artifactUpdate
        emit({"call": label, "kind": kind,
              "event": MessageToDict(getattr(resp, field), preserving_proto_field_name=False)})
        if kind == "task":
            task_id, context_id = resp.task.id, resp.task.context_id
            state = resp.task.status.state
        elif kind == "statusUpdate":
            task_id, context_id = resp.status_update.task_id, resp.status_update.context_id
            state = resp.status_update.status.state
        elif kind == "message":
            got_message = True
        if cancel_after is not None and task_id and cancel_task is None:
            cancel_task = asyncio.create_task(do_cancel(task_id))
    if cancel_task is not None:
        if not cancel_task.done():
            cancel_task.cancel()
        else:
            cancel_task.result()  # surface errors
    name = TaskState.Name(state)
    if got_message or state in TERMINAL:
        return "terminal", name, task_id, context_id
    if state in INTERRUPTED:
        return "interrupted", name, task_id, context_id
    return "incomplete", name, task_id, context_id


async def main_async(args) -> int:
    data = json.loads(args.data) if args.data else None
    async with httpx.AsyncClient(timeout=httpx.Timeout(args.timeout)) as http:
        # An anonymous caller keeps the identity the server issued it (x-anonymous-token), as a
        # browser keeps a cookie: without it each call would be a new caller.
        async def keep_anonymous_token(response: httpx.Response) -> None:
            token = response.headers.get("x-anonymous-token")
            if token:
                http.headers["x-anonymous-token"] = token

        http.event_hooks = {"response": [keep_anonymous_token]}
        card = await A2ACardResolver(http, args.url).get_agent_card()
        emit({"call": "card", "kind": "agentCard",
              "event": MessageToDict(card, preserving_proto_field_name=False)})

        modes = []
        if not args.no_stream:
            modes.append(("stream", True))
        if not args.no_blocking:
            modes.append(("send", False))
        if not modes:
            print("nothing to do", file=sys.stderr)
            return 1

        worst = 0
        for label, streaming in modes:
            factory = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http))
            client = factory.create(card)
            outcome, state, tid, cid = await run_call(
                client, label, build_message(args.text, data), args.cancel_after)
            if outcome == "interrupted" and args.follow_up:
                emit({"call": label, "kind": "followUp", "event": {"taskId": tid, "contextId": cid}})
                outcome, state, tid, cid = await run_call(
                    client, label + "+followup",
                    build_message(args.follow_up_text, json.loads(args.follow_up), tid, cid), None)
            emit({"call": label, "kind": "outcome",
                  "event": {"outcome": outcome, "state": state, "taskId": tid, "contextId": cid}})
            code = {"terminal": 0, "interrupted": 2}.get(outcome, 1)
            if code == 1 or (code == 2 and worst == 0):
                worst = code
        return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("url")
    ap.add_argument("text")
    ap.add_argument("--data", help="JSON object sent as a data part")
    ap.add_argument("--no-stream", action="store_true", help="skip the streaming call")
    ap.add_argument("--no-blocking", action="store_true", help="skip the non-streaming call")
    ap.add_argument("--follow-up", help="JSON data part to send on the same task if INPUT_REQUIRED")
    ap.add_argument("--follow-up-text", default="", help="text to send with --follow-up")
    ap.add_argument("--cancel-after", type=float, help="CancelTask this many seconds after the task id is known")
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args()
    try:
        code = asyncio.run(main_async(args))
    except Exception as e:  # noqa: BLE001
        emit({"call": "error", "kind": "error", "event": {"type": type(e).__name__, "message": str(e)}})
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    main()
