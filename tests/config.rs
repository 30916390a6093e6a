//! Config loading and validation: the shipped files, broken files (every error, with location),
//! the checked-in JSON Schema, and `switchboard validate`.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use switchboard::config::{self, ConfigError};

use crate::common::*;

fn errors_of(config: &Value, dir: &Path) -> Vec<ConfigError> {
    let path = dir.join("agents_config.yaml");
    write_config(&path, config);
    match config::load(&path) {
        Ok(_) => Vec::new(),
        Err(e) => e.0,
    }
}

fn pointers(errors: &[ConfigError]) -> Vec<&str> {
    errors.iter().filter_map(|e| e.pointer.as_deref()).collect()
}

#[test]
fn the_shipped_config_is_valid() {
    let loaded = config::load(&repo().join("agents_config.yaml")).unwrap_or_else(|e| panic!("{:#?}", e.0));
    assert!(loaded.agents.len() >= 5);
    assert!(loaded.agents.iter().any(|a| a.spec.endpoint.protocol == config::Protocol::Sse));
    assert_eq!(loaded.hash.len(), 64);
}

#[test]
fn the_checked_in_json_schema_matches_the_rust_types() {
    let path = repo().join("schemas/agents_config.schema.json");
    let fresh = serde_json::to_string_pretty(&config::config_json_schema()).unwrap() + "\n";
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &fresh).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == fresh,
        "schemas/agents_config.schema.json is stale: run `UPDATE_SCHEMA=1 cargo test the_checked_in_json_schema` (or `switchboard schema`)"
    );
}

#[test]
fn the_shipped_config_validates_against_the_checked_in_schema() {
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("schemas/agents_config.schema.json")).unwrap())
            .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&repo_config()));
    let mut typo = repo_config();
    typo["agents"][0]["descripton"] = json!("typo");
    assert!(!validator.is_valid(&typo), "unknown fields are rejected by the schema too");
}

#[test]
fn every_error_is_collected_with_its_location() {
    let dir = tempfile::tempdir().unwrap();
    copy_support_files(dir.path());
    let mut cfg = repo_config();
    cfg["agents"][0]["descripton"] = json!("typo'd key");
    cfg["agents"][1]["endpoint"]["protocol"] = json!("carrier-pigeon");
    cfg["supervisor"]["clarification_timeout"] = json!("soon");
    let errors = errors_of(&cfg, dir.path());
    let ptrs = pointers(&errors);
    assert!(ptrs.contains(&"/agents/0"), "{errors:#?}");
    assert!(ptrs.contains(&"/agents/1/endpoint/protocol"), "{errors:#?}");
    assert!(ptrs.contains(&"/supervisor/clarification_timeout"), "{errors:#?}");
    assert!(errors.iter().any(|e| e.message.contains("descripton")), "the unknown key is named: {errors:#?}");
    assert!(errors.iter().all(|e| e.file.ends_with("agents_config.yaml")));
}

#[test]
fn cross_reference_errors_are_all_reported() {
    let dir = tempfile::tempdir().unwrap();
    copy_support_files(dir.path());
    let mut cfg = repo_config();
    let first_id = cfg["agents"][0]["id"].clone();
    cfg["agents"][1]["id"] = first_id;
    cfg["agents"][2]["required_semantic_keys"][0]["widget"] = json!("no_such_widget");
    cfg["agents"][3]["input_schema"] = json!("schemas/agents/missing.json");
    cfg["agents"][4]["required_semantic_keys"][0]["key"] = json!("not_in_schema");
    cfg["agents"][0]["endpoint"]["headers"] = json!({ "Authorization": "Bearer ${SWITCHBOARD_TEST_UNSET_VAR}" });
    cfg["agents"][2]["endpoint"]["url"] = json!("ftp://example.com/x");
    let errors = errors_of(&cfg, dir.path());
    let ptrs = pointers(&errors);
    for expected in [
        "/agents/1/id",
        "/agents/2/required_semantic_keys/0/widget",
        "/agents/3/input_schema",
        "/agents/4/required_semantic_keys/0/key",
        "/agents/0/endpoint/headers/Authorization",
        "/agents/2/endpoint/url",
    ] {
        assert!(ptrs.contains(&expected), "missing {expected}: {errors:#?}");
    }
    assert!(errors.iter().any(|e| e.message.contains("SWITCHBOARD_TEST_UNSET_VAR")));
}

#[test]
fn yaml_syntax_errors_have_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agents_config.yaml");
    std::fs::write(&path, "version: 1\nagents:\n  - id: [unclosed\n").unwrap();
    let errors = config::load(&path).unwrap_err().0;
    assert_eq!(errors.len(), 1);
    assert!(errors[0].line.is_some() && errors[0].column.is_some(), "{errors:#?}");
    assert!(errors[0].to_string().contains("agents_config.yaml:"), "{}", errors[0]);
}

#[test]
fn missing_and_empty_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agents_config.yaml");
    assert!(config::load(&path).is_err());
    std::fs::write(&path, "  \n").unwrap();
    let errors = config::load(&path).unwrap_err().0;
    assert!(errors[0].message.contains("empty"));
}

#[test]
fn bad_extract_and_schema_files_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    copy_support_files(dir.path());
    std::fs::write(dir.path().join("schemas/agents/broken.json"), "{ not json").unwrap();
    std::fs::write(dir.path().join("schemas/agents/not_a_schema.json"), r#"{"type": 12}"#).unwrap();
    let mut cfg = repo_config();
    cfg["agents"][0]["output_schema"] = json!("schemas/agents/broken.json");
    cfg["agents"][1]["output_schema"] = json!("schemas/agents/not_a_schema.json");
    cfg["agents"][2]["required_semantic_keys"][0]["extract"] = json!({ "pattern": "no group" });
    cfg["agents"][3]["required_semantic_keys"][0]["extract"] = json!({ "values_from": "nowhere" });
    cfg["agents"][4]["required_semantic_keys"][0]["extract"] = json!({ "type": "number", "values": ["a"] });
    cfg["agents"][4]["required_semantic_keys"][1]["extract"] = json!({ "type": "number", "not_before": "today" });
    cfg["supervisor"]["timezone"] = json!("Mars/Olympus_Mons");
    let errors = errors_of(&cfg, dir.path());
    let ptrs = pointers(&errors);
    for expected in [
        "/agents/0/output_schema",
        "/agents/1/output_schema",
        "/agents/2/required_semantic_keys/0/extract/pattern",
        "/agents/3/required_semantic_keys/0/extract/values_from",
        "/agents/4/required_semantic_keys/0/extract",
        "/agents/4/required_semantic_keys/1/extract/not_before",
        "/supervisor/timezone",
    ] {
        assert!(ptrs.contains(&expected), "missing {expected}: {errors:#?}");
    }
}

#[test]
fn env_variables_are_interpolated_into_headers() {
    let dir = tempfile::tempdir().unwrap();
    copy_support_files(dir.path());
    let mut cfg = repo_config();
    cfg["agents"][0]["endpoint"]["headers"] = json!({ "Authorization": "Bearer ${SB_TOKEN}" });
    let path = dir.path().join("agents_config.yaml");
    write_config(&path, &cfg);
    let text = std::fs::read_to_string(&path).unwrap();
    let env = |name: &str| (name == "SB_TOKEN").then(|| "s3cret".to_string());
    let loaded = config::load_from_str(&text, &path, dir.path(), &env).unwrap();
    assert_eq!(loaded.agents[0].headers, vec![("Authorization".to_string(), "Bearer s3cret".to_string())]);
}

fn validate_cmd(path: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard")).arg("validate").arg(path).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn validate_command_on_good_and_broken_files() {
    let (ok, out) = validate_cmd(&repo().join("agents_config.yaml"));
    assert!(ok, "{out}");
    assert!(out.contains("valid"), "{out}");

    let dir = tempfile::tempdir().unwrap();
    copy_support_files(dir.path());
    let mut cfg = repo_config();
    cfg["agents"][0]["required_semantic_keys"][0]["widget"] = json!("nope_widget");
    cfg["agents"][1]["input_schema"] = json!("schemas/agents/absent.json");
    let path = dir.path().join("agents_config.yaml");
    write_config(&path, &cfg);
    let (ok, out) = validate_cmd(&path);
    assert!(!ok, "exit code is non-zero");
    assert!(out.contains("nope_widget") && out.contains("absent.json"), "every error printed: {out}");
    assert!(out.contains("2 error(s)"), "{out}");
}

#[test]
fn validate_reports_the_cross_references_of_agents_that_did_parse_in_the_same_run() {
    // Issue 17 #18: a type error in one agent hid the unknown widget and the missing schema file
    // of the others until the first was fixed.
    let dir = tempfile::tempdir().unwrap();
    copy_support_files(dir.path());
    let mut cfg = repo_config();
    cfg["agents"][0]["keywords"] = json!(42);
    cfg["agents"][2]["required_semantic_keys"][0]["widget"] = json!("nope_widget");
    cfg["agents"][3]["output_schema"] = json!("schemas/agents/absent.json");
    let path = dir.path().join("agents_config.yaml");
    write_config(&path, &cfg);
    let (ok, out) = validate_cmd(&path);
    assert!(!ok, "exit code is non-zero");
    assert!(out.contains("/agents/0/keywords"), "the structural error: {out}");
    assert!(out.contains("nope_widget") && out.contains("/agents/2/"), "agent 2's widget, at its own place: {out}");
    assert!(out.contains("absent.json"), "agent 3's schema file: {out}");
    assert!(out.contains("3 error(s)"), "{out}");

    // The same through the library: every error carries the agent's place in the file.
    let errors = config::load(&path).unwrap_err().0;
    let pointers: Vec<&str> = errors.iter().filter_map(|e| e.pointer.as_deref()).collect();
    assert!(pointers.iter().any(|p| p.starts_with("/agents/2/required_semantic_keys/0")), "{errors:#?}");
    assert!(!pointers.iter().any(|p| p.starts_with("/agents/1")), "agent 1 is fine: {errors:#?}");
}

#[test]
fn prompt_templates_are_read_from_the_config_dir_and_watched() {
    let dir = tempfile::tempdir().unwrap();
    copy_support_files(dir.path());
    let path = dir.path().join("agents_config.yaml");
    write_config(&path, &repo_config());
    let builtin = config::load(&path).unwrap();
    assert!(builtin.prompts.intent.contains("{{cards}}"), "the built-in template");

    std::fs::create_dir(dir.path().join("prompts")).unwrap();
    std::fs::write(dir.path().join("prompts/intent.md"), "自定义意图识别 {{cards}}").unwrap();
    let custom = config::load(&path).unwrap();
    assert_eq!(custom.prompts.intent, "自定义意图识别 {{cards}}");
    assert_eq!(custom.prompts.plan, builtin.prompts.plan, "absent templates stay built-in");
    assert!(custom.sources.iter().any(|s| s.ends_with("prompts/intent.md")), "watched for hot reload");
    assert_ne!(custom.hash, builtin.hash, "a prompt edit is a new registry version");
}

#[test]
fn compiled_schemas_are_shared_and_invalid_ones_reported_each_time() {
    let schema = json!({"type": "object", "properties": {"city": {"type": "string", "minLength": 2}}});
    let first = config::compile_schema(&schema).unwrap();
    let again = config::compile_schema(&schema.clone()).unwrap();
    assert!(std::sync::Arc::ptr_eq(&first, &again), "the same schema text gives the same validator");
    assert!(first.is_valid(&json!({"city": "北京"})));
    assert!(!first.is_valid(&json!({"city": "x"})));
    let other = config::compile_schema(&json!({"type": "string"})).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&first, &other));
    let invalid = json!({"type": 12});
    assert!(config::compile_schema(&invalid).is_err());
    assert!(config::compile_schema(&invalid).is_err(), "an invalid schema is not remembered as valid");
}
