//! A tool whose schemas are derived from Rust types with `schemars`.
//!
//! Run: `cargo run -p toolwright-server --example typed_tool`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolwright_protocol::{Implementation, ToolAnnotations};
use toolwright_server::{Config, Server, ToolContext, ToolDefinition, ToolError, Typed, TypedTool};

/// Arguments of `convert_temperature`.
#[derive(Deserialize, JsonSchema)]
struct Input {
    /// The temperature to convert.
    value: f64,
    /// The unit of `value`.
    from: Unit,
}

/// A temperature unit.
#[derive(Deserialize, Serialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// The converted temperature.
#[derive(Serialize, JsonSchema)]
struct Output {
    /// The converted value.
    value: f64,
    /// Its unit.
    unit: Unit,
}

struct ConvertTemperature;

impl TypedTool for ConvertTemperature {
    type Input = Input;
    type Output = Output;

    fn name(&self) -> &str {
        "convert_temperature"
    }

    fn description(&self) -> &str {
        "Convert a temperature between Celsius and Fahrenheit. Returns the value in the other \
         unit. Use this instead of converting by hand."
    }

    fn customize(&self, definition: ToolDefinition) -> ToolDefinition {
        definition.with_annotations(ToolAnnotations::read_only_closed_world(
            "Convert temperature",
        ))
    }

    async fn run(&self, input: Input, _ctx: ToolContext) -> Result<Output, ToolError> {
        Ok(match input.from {
            Unit::Celsius => Output {
                value: input.value * 9.0 / 5.0 + 32.0,
                unit: Unit::Fahrenheit,
            },
            Unit::Fahrenheit => Output {
                value: (input.value - 32.0) * 5.0 / 9.0,
                unit: Unit::Celsius,
            },
        })
    }
}

fn main() -> std::io::Result<()> {
    let server = Server::new(
        Implementation::new("temperatures", "1.0.0"),
        Config::default(),
    );
    server
        .register(Typed(ConvertTemperature))
        .expect("derived schemas compile");
    let rt = tokio::runtime::Runtime::new()?;
    toolwright_server::serve_stdio(&server, rt.handle())
}
