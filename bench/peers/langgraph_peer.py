"""The Python peer of bench/run.sh: a LangGraph + FastAPI supervisor serving the bench plan.

`POST /v1/chat` {query, user_id, thread_id?} -> SSE. The graph fans out from a planner node to
two sub-agent nodes that run in parallel (weather, exchange: one httpx POST each to the
zero-latency nginx sub-agent), then joins in a summarize node. Each step goes out as an SSE event
(sse-starlette), ~10 per turn like Switchboard's stream: intent, plan, two agent starts, two
agent results, summarize, answer. A per-thread in-memory checkpointer (LangGraph's MemorySaver)
plays the session store.

Run: `uvicorn langgraph_peer:app --host 127.0.0.1 --port 18082` with SUB_AGENT_BASE set
(default http://127.0.0.1:18081).
"""

import json
import operator
import os
import uuid
from typing import Annotated, Any, TypedDict

import httpx
from fastapi import FastAPI, Request
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, StateGraph
from sse_starlette.sse import EventSourceResponse

BASE = os.environ.get("SUB_AGENT_BASE", "http://127.0.0.1:18081")
client = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=64), timeout=10.0)


class TurnState(TypedDict, total=False):
    query: str
    plan: list[dict[str, Any]]
    outputs: Annotated[list[dict[str, Any]], operator.add]
    answer: str


async def call_agent(agent: str, path: str, state: TurnState) -> dict[str, Any]:
    body = {"task_id": f"{agent}_task", "message": state["query"], "inputs": {"message": state["query"]}}
    reply = (await client.post(f"{BASE}/{path}", json=body)).json()
    return {"agent": agent, "output": reply.get("output"), "message": reply.get("message", "")}


def plan(state: TurnState) -> TurnState:
    return {
        "plan": [
            {"task_id": "task_1", "agent": "weather_agent", "depends_on": []},
            {"task_id": "task_2", "agent": "exchange_agent", "depends_on": []},
        ]
    }


async def weather(state: TurnState) -> TurnState:
    return {"outputs": [await call_agent("weather_agent", "weather", state)]}


async def exchange(state: TurnState) -> TurnState:
    return {"outputs": [await call_agent("exchange_agent", "exchange", state)]}


def summarize(state: TurnState) -> TurnState:
    return {"answer": " ".join(o["message"] for o in state["outputs"])}


builder = StateGraph(TurnState)
builder.add_node("plan", plan)
builder.add_node("weather_agent", weather)
builder.add_node("exchange_agent", exchange)
builder.add_node("summarize", summarize)
builder.add_edge(START, "plan")
builder.add_edge("plan", "weather_agent")
builder.add_edge("plan", "exchange_agent")
builder.add_edge("weather_agent", "summarize")
builder.add_edge("exchange_agent", "summarize")
builder.add_edge("summarize", END)
graph = builder.compile(checkpointer=MemorySaver())

app = FastAPI()


@app.post("/v1/chat")
async def chat(request: Request):
    body = await request.json()
    thread_id = body.get("thread_id") or f"th_{uuid.uuid4().hex}"
    query = body.get("query", "")

    async def events():
        seq = 0

        def event(stage: str, data: dict[str, Any]) -> dict[str, str]:
            nonlocal seq
            seq += 1
            data = {"seq": seq, "stage": stage, "thread_id": thread_id, **data}
            return {"event": stage, "id": str(seq), "data": json.dumps(data, ensure_ascii=False)}

        yield event("intent_started", {})
        config = {"configurable": {"thread_id": thread_id}}
        async for update in graph.astream({"query": query, "outputs": []}, config, stream_mode="updates"):
            for node, change in update.items():
                if node == "plan":
                    yield event("intent_done", {"intent": [t["agent"] for t in change["plan"]]})
                    yield event("plan_done", {"plan": change["plan"]})
                    for t in change["plan"]:
                        yield event("agent_started", {"agent_id": t["agent"]})
                elif node == "summarize":
                    yield event("summarize_started", {})
                    yield event("answer", {"type": "done", "content": change["answer"]})
                else:
                    for o in change["outputs"]:
                        yield event("agent_done", {"agent_id": o["agent"], "output": o["output"]})

    return EventSourceResponse(events(), headers={"x-thread-id": thread_id})
