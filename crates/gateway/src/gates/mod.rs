//! Hook rules and transforms from providers: checking them against the
//! capability matrix and limits, compiling them into the session's hook
//! chain and transform table (under the instance's owner key), and the
//! `gate.check` / `transform.request` round trips.

mod handlers;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, Weak};

use bridge_engine::{PROTECTED_SECTIONS, RuleAction, RuleMatch, Session, Transform};
use bridge_protocol::excerpt;
use bridge_protocol::provider::{
    ErrorCode, ErrorMessage, GateResult, HookAction, HookRule, TransformAction, TransformResult,
    TransformSpec,
};

use crate::connection::{Connection, Flow};
use crate::provider::{ProviderHandle, lock};
use crate::state::{GatewayInner, Trust};
use handlers::{ProviderGate, ProviderTransform};

/// Longest section name and `gateId`.
const MAX_NAME: usize = 64;
const MAX_GATE_ID: usize = 128;

/// What each (session, owner key) has applied, and by which registration:
/// a replacement drops the sections no longer declared while the others
/// keep their place in the order, and a stale registration (a connection
/// replaced by a reconnect under the same owner key) cannot remove what
/// its successor applied.
#[derive(Default)]
pub(crate) struct HookState {
    applied: Mutex<HashMap<(String, String), Applied>>,
}

struct Applied {
    by: Weak<ProviderHandle>,
    sections: BTreeSet<String>,
}

/// Checks rules and transforms against the capability matrix and limits
/// (`transforms` may hold `null` removals, as `hooks.update` sends them).
pub(crate) fn validate_hooks(
    gw: &GatewayInner,
    trust: &Trust,
    rules: &[HookRule],
    transforms: &BTreeMap<String, Option<TransformSpec>>,
) -> Result<(), ErrorMessage> {
    let limit = gw.settings.max_hook_rules_per_provider;
    if rules.len() > limit {
        return Err(ErrorMessage::new(
            ErrorCode::PayloadTooLarge,
            format!(
                "{} onPreToolUse rules declared; a provider may register at most {limit}",
                rules.len()
            ),
        ));
    }
    if transforms.len() > limit {
        return Err(ErrorMessage::new(
            ErrorCode::PayloadTooLarge,
            format!(
                "{} transforms declared; a provider may register at most {limit}",
                transforms.len()
            ),
        ));
    }
    if trust.is_external() && !rules.is_empty() {
        return Err(ErrorMessage::new(
            ErrorCode::Unauthorized,
            "onPreToolUse rules are not allowed at the external trust level",
        ));
    }
    for (index, rule) in rules.iter().enumerate() {
        compile_rule(index, rule, None)?;
    }
    for (section, spec) in transforms {
        validate_transform(trust, section, spec.as_ref())?;
    }
    Ok(())
}

fn validate_transform(
    trust: &Trust,
    section: &str,
    spec: Option<&TransformSpec>,
) -> Result<(), ErrorMessage> {
    let plain = !section.is_empty()
        && section.len() <= MAX_NAME
        && section
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !plain {
        return Err(ErrorMessage::new(
            ErrorCode::InvalidJson,
            format!(
                "invalid transform section {:?}: use 1-{MAX_NAME} letters, digits, '_', '-' or '.'",
                excerpt(section)
            ),
        ));
    }
    let Some(spec) = spec else {
        return Ok(());
    };
    let action = spec.action;
    if action != TransformAction::Append && PROTECTED_SECTIONS.contains(&section) {
        return Err(ErrorMessage::new(
            ErrorCode::Unauthorized,
            format!(
                "section '{section}' is protected: only append is allowed, not {}",
                action_name(action)
            ),
        ));
    }
    if trust.is_external() && action != TransformAction::Append {
        return Err(ErrorMessage::new(
            ErrorCode::Unauthorized,
            format!(
                "{} transforms are not allowed at the external trust level (only static append)",
                action_name(action)
            ),
        ));
    }
    if action != TransformAction::Callback && spec.content.is_none() {
        return Err(ErrorMessage::new(
            ErrorCode::InvalidJson,
            format!(
                "the {} transform of section '{section}' needs content",
                action_name(action)
            ),
        ));
    }
    Ok(())
}

fn action_name(action: TransformAction) -> &'static str {
    match action {
        TransformAction::Append => "append",
        TransformAction::Prepend => "prepend",
        TransformAction::Replace => "replace",
        TransformAction::Callback => "callback",
    }
}

/// Compiles one wire rule. Without a handle (validation only) gates get a
/// handler that is never called.
fn compile_rule(
    index: usize,
    rule: &HookRule,
    handle: Option<&Arc<ProviderHandle>>,
) -> Result<bridge_engine::HookRule, ErrorMessage> {
    let invalid = |message: String| {
        ErrorMessage::new(
            ErrorCode::InvalidJson,
            format!("onPreToolUse[{index}]: {message}"),
        )
    };
    let m = &rule.matcher;
    let matcher = RuleMatch::new(
        m.tool.as_deref(),
        m.args.as_deref(),
        m.provider.as_deref(),
        m.file.as_deref(),
    )
    .map_err(|err| invalid(err.to_string()))?;
    let action = match rule.action {
        HookAction::Deny => RuleAction::Deny {
            reason: rule
                .reason
                .clone()
                .unwrap_or_else(|| "blocked by a provider rule".to_owned()),
        },
        HookAction::Context => RuleAction::Context {
            content: rule
                .content
                .clone()
                .ok_or_else(|| invalid("a context rule needs content".to_owned()))?,
        },
        HookAction::Gate => {
            let gate_id = rule
                .gate_id
                .clone()
                .filter(|id| !id.is_empty())
                .ok_or_else(|| invalid("a gate rule needs a gateId".to_owned()))?;
            if gate_id.len() > MAX_GATE_ID {
                return Err(invalid(format!(
                    "gateId is longer than {MAX_GATE_ID} characters"
                )));
            }
            RuleAction::Gate {
                gate_id,
                fail_open: rule.fail_open,
                handler: Arc::new(ProviderGate {
                    provider: handle.map(Arc::downgrade).unwrap_or_default(),
                }),
            }
        }
    };
    Ok(bridge_engine::HookRule { matcher, action })
}

fn compile_transform(handle: &Arc<ProviderHandle>, spec: &TransformSpec) -> Transform {
    let content = spec.content.clone().unwrap_or_default();
    match spec.action {
        TransformAction::Append => Transform::Append(content),
        TransformAction::Prepend => Transform::Prepend(content),
        TransformAction::Replace => Transform::Replace(content),
        TransformAction::Callback => Transform::Callback(Arc::new(ProviderTransform {
            provider: Arc::downgrade(handle),
        })),
    }
}

/// Makes `rules` and `transforms` exactly what this provider instance has
/// in `session`. Everything is compiled before anything changes.
pub(crate) fn apply_hooks(
    gw: &Arc<GatewayInner>,
    handle: &Arc<ProviderHandle>,
    session: &Arc<Session>,
    rules: &[HookRule],
    transforms: &BTreeMap<String, TransformSpec>,
) -> Result<(), ErrorMessage> {
    let declared: BTreeMap<String, Option<TransformSpec>> = transforms
        .iter()
        .map(|(section, spec)| (section.clone(), Some(spec.clone())))
        .collect();
    validate_hooks(gw, &handle.trust, rules, &declared)?;
    let compiled = rules
        .iter()
        .enumerate()
        .map(|(index, rule)| compile_rule(index, rule, Some(handle)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| err.session_id(session.id()))?;
    let owner = handle.owner_key();
    let key = (session.id().to_owned(), owner.clone());
    let mut applied = lock(&gw.hooks.applied);
    session.set_rules(&owner, compiled);
    let previous = applied.remove(&key).map(|a| a.sections).unwrap_or_default();
    for gone in previous.iter().filter(|s| !transforms.contains_key(*s)) {
        let _ = session.set_transform(&owner, gone, None);
    }
    let mut sections = BTreeSet::new();
    for (section, spec) in transforms {
        // Validated above: a protected section only ever gets an append.
        let transform = compile_transform(handle, spec);
        if let Err(err) = session.set_transform(&owner, section, Some(transform)) {
            tracing::error!(provider = %owner, %section, error = %err, "transform refused after validation");
            continue;
        }
        sections.insert(section.clone());
    }
    applied.insert(
        key,
        Applied {
            by: Arc::downgrade(handle),
            sections,
        },
    );
    Ok(())
}

/// Removes this provider instance's rules and transforms from `session`
/// (nothing if a newer registration under the same owner key holds them).
pub(crate) fn remove_hooks(
    gw: &Arc<GatewayInner>,
    handle: &Arc<ProviderHandle>,
    session: &Arc<Session>,
) {
    let owner = handle.owner_key();
    let key = (session.id().to_owned(), owner.clone());
    let mut applied = lock(&gw.hooks.applied);
    let ours = applied
        .get(&key)
        .is_some_and(|a| std::ptr::eq(a.by.as_ptr(), Arc::as_ptr(handle)));
    if !ours {
        return;
    }
    let sections = applied.remove(&key).map(|a| a.sections).unwrap_or_default();
    session.set_rules(&owner, Vec::new());
    for section in sections {
        let _ = session.set_transform(&owner, &section, None);
    }
}

/// A `gate.result`: completes its `gate.check`. Late (after the engine's
/// timeout), duplicate and unknown answers are ignored.
pub(crate) fn on_gate_result(conn: &Connection, result: GateResult) -> Flow {
    if let Some(provider) = &conn.provider
        && let Some(waiter) = lock(&provider.pending_gates).remove(&result.call_id)
    {
        let _ = waiter.send(result);
    }
    Flow::Continue
}

/// A `transform.result`: completes its `transform.request`; late and
/// unknown answers are ignored.
pub(crate) fn on_transform_result(conn: &Connection, result: TransformResult) -> Flow {
    if let Some(provider) = &conn.provider
        && let Some(waiter) = lock(&provider.pending_transforms).remove(&result.call_id)
    {
        let _ = waiter.send(result.content);
    }
    Flow::Continue
}
