#!/usr/bin/env python3
"""A small real A2A agent (a "visa agent") built on the a2a-sdk server.

Speaks A2A protocol 1.0 as a2a-sdk implements it: JSON-RPC over HTTP
(methods SendMessage / SendStreamingMessage / GetTask / CancelTask, header
`A2A-Version: 1.0`). Agent Card at /.well-known/agent-card.json, JSON-RPC
endpoint at --rpc-path (default /a2a; the card's supportedInterfaces[0].url
points there).

    python a2a_peer.py --port 0      # prints: A2A_PEER_READY http://127.0.0.1:PORT

Behaviour:
  * text exactly "ping"                   -> a direct Message reply "pong" (no task)
  * text contains "fail"                  -> WORKING, then FAILED (status message)
  * text contains "slow" ("slow N")       -> 10 (N) WORKING updates 1 s apart, then
                                             COMPLETED; CancelTask -> CANCELED
  * destination known, nationality not    -> INPUT_REQUIRED (status message asks
                                             for nationality); a follow-up message
                                             on the same taskId/contextId that
                                             carries nationality completes it
  * otherwise                             -> 2 WORKING updates, one artifact (text
                                             part + data part), COMPLETED
Values are read from data parts ({"nationality": .., "destination": ..}) first,
then from text ("nationality: X", "destination: Y", "... to Japan").
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import socket
import sys
from typing import Any

import uvicorn
from starlette.applications import Starlette

from a2a.helpers import get_data_parts, get_text_parts, new_data_part, new_text_message, new_text_part
from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    TaskState,
)

log = logging.getLogger("a2a_peer")

# Pairs (nationality, destination) that do NOT need a visa; everything else does.
_VISA_FREE_GROUPS = [
    {"france", "french", "germany", "german", "italy", "italian", "spain", "spanish",
     "netherlands", "dutch", "belgium", "belgian", "austria", "austrian", "portugal",
     "portuguese", "schengen", "eu"},
    {"china", "chinese", "hong kong", "macau"},
    {"usa", "us", "american", "united states", "canada", "canadian"},
]
_VISA_FREE_EXTRA = {("japanese", "france"), ("french", "japan"), ("german", "japan"),
                    ("american", "japan"), ("american", "france"), ("british", "france"),
                    ("french", "usa"), ("german", "usa"), ("british", "usa")}


def visa_required(nationality: str, destination: str) -> bool:
    n, d = nationality.strip().lower(), destination.strip().lower()
    if n == d or n.rstrip("s") == d.rstrip("s"):
        return False
    if (n, d) in _VISA_FREE_EXTRA:
        return False
    return not any(n in g and d in g for g in _VISA_FREE_GROUPS)


def _from_text(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    m = re.search(r"nationality\s*[:=]\s*([A-Za-z][A-Za-z \-]*?)(?:[,.;\n]|$)", text, re.I)
    if m:
        out["nationality"] = m.group(1).strip()
    m = re.search(r"destination\s*[:=]\s*([A-Za-z][A-Za-z \-]*?)(?:[,.;\n]|$)", text, re.I)
    if m:
        out["destination"] = m.group(1).strip()
    elif (m := re.search(r"\bto\s+([A-Z][A-Za-z\-]*(?:\s+[A-Z][A-Za-z\-]*)*)", text)):
        out["destination"] = m.group(1).strip()
    return out


def _collect(messages) -> tuple[dict[str, str], str]:
    """Merge slots from data parts / text of the given messages (later wins)."""
    slots: dict[str, str] = {}
    texts: list[str] = []
    for msg in messages:
        if msg is None:
            continue
        text = "\n".join(get_text_parts(msg.parts))
        texts.append(text)
        for k, v in _from_text(text).items():
            slots[k] = v
        for data in get_data_parts(msg.parts):
            if isinstance(data, dict):
                for key in ("nationality", "destination"):
                    val = data.get(key)
                    if isinstance(val, str) and val.strip():
                        slots[key] = val.strip()
    return slots, "\n".join(texts)


class VisaAgentExecutor(AgentExecutor):
    def __init__(self) -> None:
        # slots collected per task id across input-required rounds
        self._slots: dict[str, dict[str, str]] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        msg = context.message
        task = context.current_task
        if task is None and "".join(get_text_parts(msg.parts)).strip().lower() == "ping":
            # A direct Message reply (no task): the `{"message": {...}}` result shape.
            await event_queue.enqueue_event(
                new_text_message("pong", context_id=context.context_id))
            return
        if task is None:
            task = new_task_from_user_message(msg)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)

        def agent_text(text: str):
            return updater.new_agent_message([new_text_part(text)])

        # Slots: earlier rounds of this task + (history) + the new message.
        prev = self._slots.get(task.id, {})
        hist_slots, _ = _collect(list(task.history))
        new_slots, text = _collect([msg])
        slots = {**prev, **hist_slots, **new_slots}
        self._slots[task.id] = slots
        lowered = text.lower()
        log.info("task=%s context=%s text=%r slots=%s", task.id, task.context_id, text, slots)

        if "fail" in lowered:
            await updater.start_work(agent_text("Checking visa requirements..."))
            await asyncio.sleep(0.05)
            await updater.failed(agent_text("The visa service is unavailable (simulated failure)."))
            return

        if "slow" in lowered:
            m = re.search(r"slow\s+(\d+)", lowered)
            n = min(int(m.group(1)), 600) if m else 10
            for i in range(1, n + 1):
                await updater.start_work(agent_text(f"Still working ({i}/{n})..."))
                await asyncio.sleep(1.0)
            await updater.add_artifact(
                [new_text_part("slow job done"), new_data_part({"done": True})],
                name="result",
            )
            await updater.complete()
            return

        destination = slots.get("destination")
        nationality = slots.get("nationality")
        if destination and not nationality:
            await updater.requires_input(
                agent_text(f"What is your nationality? I need it to check visa requirements for {destination}.")
            )
            return  # task stays open (interrupted); follow-up on same taskId resumes

        destination = destination or "unknown"
        nationality = nationality or "unknown"
        await updater.start_work(agent_text(f"Looking up visa rules for {destination}..."))
        await asyncio.sleep(0.1)
        await updater.start_work(agent_text(f"Checking entry requirements for {nationality} citizens..."))
        await asyncio.sleep(0.1)
        required = visa_required(nationality, destination)
        summary = (
            f"visa requirements for {destination}: {nationality} citizens "
            + ("need a visa." if required else "do not need a visa for short stays.")
        )
        await updater.add_artifact(
            [
                new_text_part(summary),
                new_data_part({"visa_required": required, "destination": destination,
                               "nationality": nationality}),
            ],
            name="visa_requirements",
            last_chunk=True,
        )
        await updater.complete(agent_text(summary))
        self._slots.pop(task.id, None)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        task_id = context.task_id or (task.id if task else "")
        context_id = context.context_id or (task.context_id if task else "")
        updater = TaskUpdater(event_queue, task_id, context_id)
        self._slots.pop(task_id, None)
        await updater.cancel(updater.new_agent_message([new_text_part("Task canceled.")]))


def build_card(base_url: str, rpc_path: str) -> AgentCard:
    return AgentCard(
        name="Visa Agent",
        description="Tells travellers whether they need a visa for a destination.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=base_url + rpc_path,
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(
                id="visa_check",
                name="Visa requirements",
                description="Checks visa requirements given nationality and destination.",
                tags=["travel", "visa"],
                examples=["Do I need a visa to travel to Japan? nationality: Chinese"],
                input_modes=["text/plain", "application/json"],
                output_modes=["text/plain", "application/json"],
            )
        ],
    )


def build_app(base_url: str, rpc_path: str) -> Starlette:
    card = build_card(base_url, rpc_path)
    handler = DefaultRequestHandler(
        agent_executor=VisaAgentExecutor(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url=rpc_path)
    return Starlette(routes=routes)


async def _serve(port: int, host: str, rpc_path: str) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    bound = sock.getsockname()[1]
    base_url = f"http://{host}:{bound}"
    app = build_app(base_url, rpc_path)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    serve_task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serve_task.done():
            await serve_task  # surface the startup error
            return
        await asyncio.sleep(0.02)
    print(f"A2A_PEER_READY {base_url}", flush=True)
    await serve_task


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--rpc-path", default="/a2a")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        asyncio.run(_serve(args.port, args.host, args.rpc_path))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
