//! `agents_config.yaml` + `widgets_map.json` + the referenced schemas -> a validated
//! [`LoadedConfig`] (docs/config.md).
//!
//! - [`model`]: the raw serde types (unknown fields rejected) and the generated JSON Schema.
//! - [`load`](mod@load): read, parse, validate against the schema, then cross-check references,
//!   collecting every error with its file and line/column or JSON pointer.
//! - [`yaml`]: the YAML reader, which parses a large file's agents one by one and memoizes them
//!   (a reload re-parses only the agents whose text changed).

pub mod cards;
pub mod load;
pub mod model;
pub mod yaml;

pub use cards::card_url;
pub use load::{
    compile_schema, key_subschema, load, load_from_str, load_traced, load_traced_with, parse_cidr, AuthKey,
    ConfigError, ConfigErrors, LoadedConfig, Prompts, ResolvedCard,
};
pub use model::{
    config_json_schema, Access, AgentId, AuthMode, AuthOverrides, AuthSettings, CapabilityCardSpec, CircuitOpenAction,
    ConfigFile, DateBound, EndpointSpec, ExtractSpec, GuardrailSettings, HumanDuration, InjectionAction, JwtSettings,
    LocalizedText, PlannerSettings, Protocol, SchemaSource, SemanticKeySpec, SupervisorSettings, TrustedHeaderSettings,
    UnverifiedWrites, ValueType,
};
