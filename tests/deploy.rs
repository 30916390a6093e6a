//! The deployment files under `deploy/` against the code and the repository's config: the Grafana
//! dashboard queries only metrics the supervisor exports, and the Kubernetes ConfigMap (flat keys)
//! carries every file `agents_config.yaml` names, projected back to the path it names. CI also
//! validates the rendered manifests against the Kubernetes schemas and lints the Dockerfile and
//! the compose file (`deploy/check.sh`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::common::*;

/// Metric family names (and their histogram series) the supervisor exports, every family touched.
fn exported_series() -> BTreeSet<String> {
    use switchboard::metrics;
    metrics::request("answer");
    metrics::stage("plan", Duration::from_millis(1));
    metrics::agent_call("flight_agent", Duration::from_millis(1), Some("timeout"));
    metrics::blocked("city");
    metrics::reload("ok", 1);
    metrics::rejected("overload");
    let text = metrics::render(&[("flight_agent".into(), 0.0)]);
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else { continue };
        let mut words = rest.split_whitespace();
        let (Some(name), Some(kind)) = (words.next(), words.next()) else { continue };
        out.insert(name.to_string());
        if kind == "histogram" {
            for suffix in ["_bucket", "_sum", "_count"] {
                out.insert(format!("{name}{suffix}"));
            }
        }
    }
    out
}

#[test]
fn the_grafana_dashboard_queries_only_exported_metrics_and_has_the_operator_panels() {
    let text = std::fs::read_to_string(repo().join("deploy/grafana/switchboard.json")).unwrap();
    let dashboard: Value = serde_json::from_str(&text).unwrap();
    let exported = exported_series();
    assert!(exported.contains("switchboard_open_streams"), "{exported:?}");
    let metric = regex::Regex::new(r"switchboard_[a-z_]+").unwrap();
    let mut ids = BTreeSet::new();
    let mut used = BTreeSet::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        assert!(ids.insert(panel["id"].as_u64().unwrap()), "duplicate panel id {}", panel["id"]);
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap();
            for m in metric.find_iter(expr) {
                assert!(
                    exported.contains(m.as_str()),
                    "panel {:?} queries {}, which is not exported",
                    panel["title"],
                    m.as_str()
                );
                used.insert(m.as_str().to_string());
            }
        }
    }
    for family in [
        "switchboard_requests_total",
        "switchboard_stage_seconds_bucket",
        "switchboard_agent_calls_total",
        "switchboard_agent_circuit_state",
        "switchboard_config_reloads_total",
        "switchboard_open_streams",
    ] {
        assert!(used.contains(family), "no panel shows {family}");
    }
    for var in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(q) = var["definition"].as_str() {
            let m = metric.find(q).unwrap();
            assert!(exported.contains(m.as_str()), "variable {} queries {}", var["name"], m.as_str());
        }
    }
}

#[derive(Deserialize)]
struct Kustomization {
    resources: Vec<String>,
    #[serde(rename = "configMapGenerator")]
    generators: Vec<Generator>,
}

#[derive(Deserialize)]
struct Generator {
    name: String,
    files: Vec<String>,
}

#[test]
fn the_kustomize_configmap_carries_every_config_file_at_the_path_the_config_names() {
    let k8s = repo().join("deploy/k8s");
    let kust: Kustomization =
        serde_yaml_ng::from_str(&std::fs::read_to_string(k8s.join("kustomization.yaml")).unwrap()).unwrap();
    for r in &kust.resources {
        assert!(k8s.join(r).exists(), "kustomization.yaml names {r}, which does not exist");
    }
    let generator = kust.generators.iter().find(|g| g.name == "switchboard-config").expect("switchboard-config");
    // key -> source file, relative to the repository root.
    let mut keys: BTreeMap<String, String> = BTreeMap::new();
    for f in &generator.files {
        let (key, src) = f.split_once('=').unwrap_or_else(|| panic!("{f}: give key=path"));
        assert!(!key.contains('/'), "ConfigMap key {key} cannot hold '/'");
        let src = src.strip_prefix("../../").unwrap_or_else(|| panic!("{src}: expected a repository file (../../)"));
        assert!(repo().join(src).exists(), "{src} does not exist");
        keys.insert(key.to_string(), src.to_string());
    }

    // The Deployment's projection of those keys.
    let text = std::fs::read_to_string(k8s.join("switchboard.yaml")).unwrap();
    let mut projected: BTreeMap<String, String> = BTreeMap::new();
    let mut mount = String::new();
    for doc in serde_yaml_ng::Deserializer::from_str(&text) {
        let doc = Value::deserialize(doc).unwrap();
        if doc["kind"] != "Deployment" {
            continue;
        }
        let spec = &doc["spec"]["template"]["spec"];
        for volume in spec["volumes"].as_array().unwrap() {
            if volume["configMap"]["name"] == "switchboard-config" {
                for item in volume["configMap"]["items"].as_array().unwrap() {
                    projected.insert(item["key"].as_str().unwrap().into(), item["path"].as_str().unwrap().into());
                }
            }
        }
        let container = &spec["containers"][0];
        mount = container["volumeMounts"][0]["mountPath"].as_str().unwrap().to_string();
        let config_env =
            container["env"].as_array().unwrap().iter().find(|e| e["name"] == "SWITCHBOARD_CONFIG").unwrap();
        assert_eq!(config_env["value"], format!("{mount}/agents_config.yaml"));
    }
    assert_eq!(mount, "/config");

    // Every file the repository's config reads, under the path it reads it from.
    let config = switchboard::config::load(&repo().join("agents_config.yaml")).unwrap();
    let mut needed: BTreeSet<String> = BTreeSet::new();
    for source in &config.sources {
        let rel = source.strip_prefix(repo()).unwrap().to_string_lossy().to_string();
        // Prompt templates are optional (built-in defaults); the image ships them.
        if !rel.starts_with("prompts/") {
            needed.insert(rel);
        }
    }
    for rel in &needed {
        let key = keys.iter().find(|(_, src)| *src == rel).map(|(k, _)| k.clone());
        let key = key.unwrap_or_else(|| panic!("{rel} is read by agents_config.yaml but not in the ConfigMap"));
        assert_eq!(projected.get(&key), Some(rel), "ConfigMap key {key} must be projected to {rel}");
    }
    assert_eq!(keys.len(), projected.len(), "every ConfigMap key is projected");
}
