//! The repository's demo config files (`agents_config.yaml`, `widgets_map.json`,
//! `schemas/agents/*.json`) agree with each other and with the sample agents.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use switchboard_demo::{spawn_sample_agent, SampleAgentKind, SampleOptions};
use tokio::net::TcpListener;

/// The repository root (this crate is `crates/switchboard-demo`).
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::options().should_validate_formats(true).build(schema).unwrap()
}

fn assert_valid(v: &jsonschema::Validator, instance: &Value, what: &str) {
    let errors: Vec<String> = v.iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{what}: {errors:?}\n{instance:#}");
}

/// A supervisor-shaped request body.
fn request(message: &str, inputs: Value) -> Value {
    json!({
        "task_id": "plan_1_task_1", "plan_id": "plan_1", "session_id": "s1", "user_id": "u1",
        "thread_id": "th1", "message": message, "inputs": inputs, "context": { "dependencies": {} },
    })
}

fn sample_inputs(kind: SampleAgentKind) -> Value {
    match kind {
        SampleAgentKind::Flight => json!({ "flight_no": "CA1234" }),
        SampleAgentKind::Pickup => json!({ "airport": "白云机场", "arrival_time": "2026-12-01T14:30" }),
        SampleAgentKind::Hotel => json!({ "city": "北京", "check_in_date": "2026-12-01", "nights": 2 }),
        SampleAgentKind::Weather => json!({ "city": "上海" }),
        SampleAgentKind::Exchange => json!({ "amount": 1000, "currency": "美元" }),
    }
}

/// Calls the agent behind `url` in JSON mode: `Ok(reply)` on 200, `Err(error body)` otherwise.
async fn call(client: &reqwest::Client, url: &str, body: &Value) -> Result<Value, Value> {
    let resp = client.post(url).json(body).send().await.unwrap();
    let ok = resp.status() == 200;
    let v: Value = resp.json().await.unwrap();
    if ok {
        Ok(v)
    } else {
        Err(v)
    }
}

/// Every schema compiles, semantic keys are input properties, produced keys are required outputs,
/// widgets exist, and every value of the config's lists is accepted by the agents that use it.
#[tokio::test]
async fn demo_config_files_agree_with_the_agents() {
    let root = repo();
    let config: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(root.join("agents_config.yaml")).unwrap()).unwrap();
    let widgets = read_json(&root.join(config["widgets_map"].as_str().unwrap()));
    assert_valid(&validator(&read_json(&root.join("schemas/widgets_map.schema.json"))), &widgets, "widgets_map");
    let lists = config["lists"].as_object().unwrap();
    let client = reqwest::Client::new();

    let agents = config["agents"].as_array().unwrap();
    assert_eq!(agents.len(), SampleAgentKind::ALL.len());
    for (kind, agent) in SampleAgentKind::ALL.into_iter().zip(agents) {
        let id = kind.agent_id();
        assert_eq!(agent["id"], id);
        let protocol = if kind == SampleAgentKind::Pickup { "sse" } else { "http" };
        assert_eq!(agent["endpoint"]["protocol"], protocol, "{id}");
        let input = read_json(&root.join(agent["input_schema"].as_str().unwrap()));
        let output = read_json(&root.join(agent["output_schema"].as_str().unwrap()));
        let (input_v, output_v) = (validator(&input), validator(&output));
        assert_eq!(input["properties"]["message"]["type"], "string", "{id}");

        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let h = spawn_sample_agent(kind, listener, SampleOptions { delay: Duration::ZERO }).await;
        let url = h.url();

        let keys = agent["required_semantic_keys"].as_array().unwrap();
        let required: Vec<&str> = input["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(required, keys.iter().map(|k| k["key"].as_str().unwrap()).collect::<Vec<_>>(), "{id}");
        let mut example_inputs = serde_json::Map::new();
        for k in keys {
            let key = k["key"].as_str().unwrap();
            let fields: Vec<&String> = k.as_object().unwrap().keys().collect();
            assert_eq!(fields[..5], ["key", "description", "widget", "extract", "example"], "{id}.{key}");
            assert!(fields[5..].iter().all(|f| ["synonyms", "from"].contains(&f.as_str())), "{id}.{key}: {fields:?}");
            // A `from` name is an output some card produces.
            for name in k["from"].as_array().into_iter().flatten() {
                let produced = agents.iter().any(|a| a["produces"].as_array().is_some_and(|p| p.contains(name)));
                assert!(produced, "{id}.{key}: from {name} is produced by a card");
            }
            assert!(input["properties"][key].is_object(), "{id}: {key} is an input property");
            let widget = k["widget"].as_str().unwrap();
            assert!(widgets[widget].is_object(), "{id}.{key}: widget {widget} exists");
            example_inputs.insert(key.to_string(), k["example"].clone());
            if let Some(list) = k["extract"]["values_from"].as_str() {
                let values = lists[list].as_array().unwrap_or_else(|| panic!("list {list}"));
                assert_eq!(&input["properties"][key]["enum"], &lists[list], "{id}.{key}: enum = list {list}");
                // Every listed value is accepted by the agent.
                for value in values {
                    let mut inputs = sample_inputs(kind);
                    inputs[key] = value.clone();
                    let reply = call(&client, &url, &request("测试", inputs)).await;
                    assert!(reply.is_ok(), "{id} accepts {key} = {value}: {reply:?}");
                }
            }
        }
        // The examples form a valid input, and the agent's output for it is a valid output
        // that carries every produced key.
        assert_valid(&input_v, &Value::Object(example_inputs.clone()), &format!("{id} examples"));
        let reply = call(&client, &url, &request("测试", Value::Object(example_inputs))).await.unwrap();
        let reply_output = &reply["output"];
        assert_valid(&output_v, reply_output, &format!("{id} output"));
        let out_required: Vec<&str> =
            output["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        for produced in agent["produces"].as_array().unwrap() {
            assert!(out_required.contains(&produced.as_str().unwrap()), "{id}: produces {produced} is required");
        }
        let mut reply_keys: Vec<&String> = reply_output.as_object().unwrap().keys().collect();
        let mut schema_keys: Vec<&String> = output["properties"].as_object().unwrap().keys().collect();
        reply_keys.sort();
        schema_keys.sort();
        assert_eq!(reply_keys, schema_keys, "{id}: the output schema describes exactly the output");
    }
}
