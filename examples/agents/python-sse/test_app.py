"""The agent's own tests: the event stream's framing, dependencies, optional fields, bad requests."""

import json

from fastapi.testclient import TestClient

from app import app

client = TestClient(app)


def body(inputs, dependencies=None, message="去北京住三晚要带什么"):
    return {
        "task_id": "plan_1_task_1",
        "plan_id": "plan_1",
        "session_id": "s",
        "user_id": "u",
        "thread_id": "t",
        "message": message,
        "inputs": {"message": message, **inputs},
        "context": {"dependencies": dependencies or {}},
    }


def events(resp):
    """(event, data) pairs of an SSE body."""
    out = []
    for block in resp.text.split("\n\n"):
        lines = [line for line in block.splitlines() if line and not line.startswith(":")]
        if not lines:
            continue
        name = next((line[len("event: "):] for line in lines if line.startswith("event: ")), "message")
        data = "\n".join(line[len("data: "):] for line in lines if line.startswith("data: "))
        out.append((name, json.loads(data)))
    return out


def test_deltas_then_one_result():
    with client.stream("POST", "/invoke", json=body({"city": "Sanya", "nights": 2}),
                       headers={"accept": "text/event-stream"}) as resp:
        resp.read()
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    evs = events(resp)
    assert [name for name, _ in evs] == ["delta", "delta", "result"]
    assert all(isinstance(data["text"], str) for name, data in evs if name == "delta")
    result = evs[-1][1]
    assert result["output"] == {"city": "Sanya", "nights": 2, "items": result["output"]["items"]}
    assert "sunscreen" in result["output"]["items"]
    assert result["message"].startswith("去Sanya住 2 晚")


def test_nights_from_a_dependency():
    deps = {"plan_1_task_0": {"nights": 4}}
    resp = client.post("/invoke", json=body({"city": "北京"}, deps))
    assert events(resp)[-1][1]["output"]["nights"] == 4


def test_bad_requests_get_a_4xx_not_a_stream():
    resp = client.post("/invoke", content=b'{"task_id": ', headers={"content-type": "application/json"})
    assert resp.status_code == 400
    resp = client.post("/invoke", json=body({"nights": 2}))
    assert resp.status_code == 422
