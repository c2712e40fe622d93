//! The attribute names the hub's spans and metrics carry: OpenTelemetry's
//! GenAI and MCP semantic conventions as of [`VERSION`], and the hub's own
//! under `copilot_bridge.*` (what no convention names: the door a call came
//! by, the policy's decision and its reason, the routing rule).

/// The semantic conventions version followed (GenAI spans and metrics,
/// MCP spans). Also the resource's `telemetry.schema_url` suffix.
pub const VERSION: &str = "1.37.0";
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.37.0";

pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
pub const GEN_AI_PROVIDER_NAME: &str = "gen_ai.provider.name";
pub const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
pub const GEN_AI_RESPONSE_MODEL: &str = "gen_ai.response.model";
pub const GEN_AI_RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
pub const GEN_AI_USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
pub const GEN_AI_USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
pub const GEN_AI_CONVERSATION_ID: &str = "gen_ai.conversation.id";
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
pub const GEN_AI_TOOL_CALL_ID: &str = "gen_ai.tool.call.id";
pub const GEN_AI_TOOL_TYPE: &str = "gen_ai.tool.type";
pub const GEN_AI_TOOL_CALL_ARGUMENTS: &str = "gen_ai.tool.call.arguments";
pub const GEN_AI_TOOL_CALL_RESULT: &str = "gen_ai.tool.call.result";
pub const GEN_AI_INPUT_MESSAGES: &str = "gen_ai.input.messages";
pub const GEN_AI_OUTPUT_MESSAGES: &str = "gen_ai.output.messages";
pub const GEN_AI_AGENT_NAME: &str = "gen_ai.agent.name";
pub const GEN_AI_TOKEN_TYPE: &str = "gen_ai.token.type";
pub const ERROR_TYPE: &str = "error.type";
pub const MCP_METHOD_NAME: &str = "mcp.method.name";
pub const MCP_SESSION_ID: &str = "mcp.session.id";

pub const OP_CHAT: &str = "chat";
pub const OP_EXECUTE_TOOL: &str = "execute_tool";
pub const OP_INVOKE_AGENT: &str = "invoke_agent";

/// The hub's own attributes.
pub const DOOR: &str = "copilot_bridge.door";
pub const DECISION: &str = "copilot_bridge.decision";
pub const DECISION_REASON: &str = "copilot_bridge.decision.reason";
pub const CLIENT_AGENT: &str = "copilot_bridge.client.agent";
pub const ROUTE_RULE: &str = "copilot_bridge.route.rule";
pub const APPROVAL_OUTCOME: &str = "copilot_bridge.approval.outcome";
pub const SESSION_ID: &str = "copilot_bridge.session.id";
/// How a run or a request ended (`completed`, `failed`, `ok`, `error`, …).
pub const STATUS: &str = "copilot_bridge.status";
