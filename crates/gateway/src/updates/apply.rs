//! Applying one update to one session: all or nothing, and the provider's
//! per-session registration record follows what is live.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bridge_engine::Session;
use bridge_protocol::excerpt;
use bridge_protocol::provider::{ErrorCode, ErrorMessage, FilterSet, ProviderTool, ToolsUpdate};

use crate::provider::{ProviderHandle, SessionRegistration, lock};
use crate::push::{self, Filter};
use crate::state::GatewayInner;
use crate::updates::Update;
use crate::{dispatch, gates};

/// What a `tools.update` must satisfy before any session is looked at.
pub(super) fn check_tools_update(update: &ToolsUpdate) -> Result<(), ErrorMessage> {
    let mut names = BTreeSet::new();
    for tool in &update.tools {
        if !names.insert(tool.name.as_str()) {
            return Err(ErrorMessage::new(
                ErrorCode::InvalidJson,
                format!("tool '{}' appears twice in tools", excerpt(&tool.name)),
            ));
        }
    }
    if let Some(both) = update.remove.iter().find(|n| names.contains(n.as_str())) {
        return Err(ErrorMessage::new(
            ErrorCode::InvalidJson,
            format!("tool '{}' is both in tools and in remove", excerpt(both)),
        ));
    }
    Ok(())
}

/// Checks a `filter.set` (own stream, rule count, patterns) and compiles
/// it. Returns the stream key and the filter (`None`: remove it).
pub(super) fn check_filter(
    gw: &GatewayInner,
    provider: &ProviderHandle,
    filter: &FilterSet,
) -> Result<(String, Option<Filter>), ErrorMessage> {
    let (stream, owner) = match filter.stream.split_once('@') {
        Some((stream, owner)) => (stream, owner),
        None => (filter.stream.as_str(), provider.name.as_str()),
    };
    if owner != provider.name {
        return Err(ErrorMessage::new(
            ErrorCode::Unauthorized,
            format!(
                "filter.set works only on this provider's own streams, not {}",
                excerpt(&filter.stream)
            ),
        ));
    }
    push::validate_stream_name(stream)
        .map_err(|message| ErrorMessage::new(ErrorCode::InvalidJson, message))?;
    let max_rules = gw.settings.max_hook_rules_per_provider;
    if filter.rules.len() > max_rules {
        return Err(ErrorMessage::new(
            ErrorCode::PayloadTooLarge,
            format!(
                "{} filter rules; a filter may have at most {max_rules}",
                filter.rules.len()
            ),
        ));
    }
    let compiled = if filter.rules.is_empty() {
        None
    } else {
        Some(
            Filter::compile(&filter.rules)
                .map_err(|message| ErrorMessage::new(ErrorCode::InvalidJson, message))?,
        )
    };
    Ok((push::stream_key(stream, &provider.name), compiled))
}

/// Applies `update` to `session`, where `provider` is bound.
pub(super) fn apply(
    gw: &Arc<GatewayInner>,
    provider: &Arc<ProviderHandle>,
    session: &Arc<Session>,
    update: &Update,
) -> Result<(), ErrorMessage> {
    let current = lock(&provider.registration)
        .sessions
        .get(session.id())
        .cloned()
        .unwrap_or_default();
    let next = match update {
        Update::Tools(update) => {
            let merged = merge_tools(&current.tools, update);
            dispatch::validate_tools(gw, &provider.name, &merged)?;
            dispatch::apply_tools(gw, provider, session, &merged)?;
            SessionRegistration {
                tools: merged,
                ..current
            }
        }
        Update::Hooks(update) => {
            let rules = update
                .on_pre_tool_use
                .clone()
                .unwrap_or_else(|| current.rules.clone());
            let mut transforms = current.transforms.clone();
            for (section, spec) in update.transforms.iter().flatten() {
                match spec {
                    Some(spec) => transforms.insert(section.clone(), spec.clone()),
                    None => transforms.remove(section),
                };
            }
            let declared: BTreeMap<_, _> = transforms
                .iter()
                .map(|(section, spec)| (section.clone(), Some(spec.clone())))
                .collect();
            gates::validate_hooks(gw, &provider.trust, &rules, &declared)?;
            if let Err(error) = gates::apply_hooks(gw, provider, session, &rules, &transforms) {
                // Put back what was live: an apply that failed half way
                // must not leave a mix.
                if let Err(restore) =
                    gates::apply_hooks(gw, provider, session, &current.rules, &current.transforms)
                {
                    tracing::error!(provider = %provider.name, session = %session.id(), error = %restore.message, "could not restore hook rules after a failed hooks.update");
                }
                return Err(error);
            }
            SessionRegistration {
                rules,
                transforms,
                ..current
            }
        }
        Update::Context(update) => {
            session.set_context(&provider.owner_key(), update.context.clone());
            SessionRegistration {
                context: update.context.clone(),
                ..current
            }
        }
        Update::Filter { key, filter } => {
            let max = gw.settings.max_streams_per_provider;
            gw.streams
                .set_filter(session.id(), key, &provider.name, filter.clone(), max)
                .map_err(|limit| {
                    ErrorMessage::new(
                        ErrorCode::PayloadTooLarge,
                        format!(
                            "this provider already has {limit} stream filters in session {} (the limit)",
                            session.id()
                        ),
                    )
                })?;
            return Ok(());
        }
    };
    if let Some(record) = lock(&provider.registration).sessions.get_mut(session.id()) {
        *record = next;
    }
    Ok(())
}

/// `current` with `update`'s removals and additions: replaced tools keep
/// their place, new ones go last.
fn merge_tools(current: &[ProviderTool], update: &ToolsUpdate) -> Vec<ProviderTool> {
    let mut merged: Vec<ProviderTool> = current
        .iter()
        .filter(|tool| !update.remove.contains(&tool.name))
        .cloned()
        .collect();
    for new in &update.tools {
        match merged.iter_mut().find(|tool| tool.name == new.name) {
            Some(existing) => *existing = new.clone(),
            None => merged.push(new.clone()),
        }
    }
    merged
}

/// An update that reached every bound session also changes what sessions
/// the provider binds to later start from (`session.ready` of an
/// `"all"`-bound provider): the `hello` as amended.
pub(super) fn amend_hello(provider: &ProviderHandle, update: &Update) {
    let mut registration = lock(&provider.registration);
    let hello = &mut registration.hello;
    match update {
        Update::Tools(update) => hello.tools = merge_tools(&hello.tools, update),
        Update::Hooks(update) => {
            let hooks = hello.hooks.get_or_insert_with(Default::default);
            if let Some(rules) = &update.on_pre_tool_use {
                hooks.on_pre_tool_use = rules.clone();
            }
            for (section, spec) in update.transforms.iter().flatten() {
                match spec {
                    Some(spec) => hooks.transforms.insert(section.clone(), Some(spec.clone())),
                    None => hooks.transforms.remove(section),
                };
            }
        }
        Update::Context(update) => hello.context = update.context.clone(),
        Update::Filter { .. } => {}
    }
}
