"""The agent's own tests: the protocol shape, dependencies, optional fields and bad requests."""

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


def test_reply_is_output_and_message():
    resp = client.post("/invoke", json=body({"city": "北京", "nights": 2}))
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("application/json")
    reply = resp.json()
    assert reply["output"]["city"] == "北京"
    assert reply["output"]["nights"] == 2
    assert "lip balm" in reply["output"]["items"]
    assert reply["message"].startswith("去北京住 2 晚")


def test_optional_nights_defaults_or_comes_from_a_dependency():
    assert client.post("/invoke", json=body({"city": "Sanya"}, message="pack?")).json()["output"]["nights"] == 3
    deps = {"plan_1_task_0": {"hotel_name": "x", "nights": 5}}
    assert client.post("/invoke", json=body({"city": "Sanya"}, deps)).json()["output"]["nights"] == 5


def test_bad_requests_get_a_4xx():
    resp = client.post("/invoke", content=b'{"task_id": ', headers={"content-type": "application/json"})
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == "bad_request"
    resp = client.post("/invoke", json=body({"city": ""}))
    assert resp.status_code == 422
    assert resp.json()["error"]["code"] == "invalid_inputs"
