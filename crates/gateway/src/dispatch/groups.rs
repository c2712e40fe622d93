//! Provider instances per (session, provider name). All instances of a
//! name share one owner in the session's tool table: one entry per tool
//! name, routed at call time. When any instance declares an `instance` id
//! the group is multi-instance: every tool gets an optional `target`
//! parameter and the group a `list_{name}_instances` meta-tool.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use async_trait::async_trait;
use bridge_engine::{Session, ToolEntry, ToolFailure, ToolHandler, ToolInvocation, ToolOwner};
use bridge_protocol::provider::{Concurrency, ErrorCode, ErrorMessage, ProviderTool};
use bridge_protocol::{ToolEffect, ToolSpec};
use serde_json::{Map, Value, json};

use super::call::GroupToolHandler;
use crate::provider::{ProviderHandle, lock};
use crate::state::GatewayInner;

/// The instance id a provider without `instance` is listed under.
pub(crate) const DEFAULT_INSTANCE: &str = "default";

/// Provider instances per (session, provider name).
#[derive(Default)]
pub(crate) struct InstanceGroups {
    /// Held for the whole of a membership change, so the session's table
    /// always matches its group. Calls never take it: their handlers hold
    /// the group itself.
    groups: Mutex<HashMap<(String, String), Arc<InstanceGroup>>>,
}

pub(crate) struct InstanceGroup {
    pub name: String,
    members: RwLock<Vec<Member>>,
}

/// One instance's part of a group.
#[derive(Clone)]
pub(crate) struct Member {
    pub handle: Arc<ProviderHandle>,
    pub tools: Vec<ProviderTool>,
    pub concurrency: Option<Concurrency>,
    pub metadata: Option<Map<String, Value>>,
}

impl Member {
    pub(crate) fn instance_id(&self) -> &str {
        self.handle.instance.as_deref().unwrap_or(DEFAULT_INSTANCE)
    }

    pub(crate) fn tool(&self, name: &str) -> Option<&ProviderTool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// Where a call goes.
#[derive(Clone)]
pub(crate) struct Route {
    pub handle: Arc<ProviderHandle>,
    pub timeout: Duration,
    pub concurrency: Option<Concurrency>,
}

impl InstanceGroup {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<Member>> {
        bridge_util::sync::read(&self.members)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Member>> {
        bridge_util::sync::write(&self.members)
    }

    /// Multi-instance: calls take `target`.
    pub(crate) fn is_multi(&self) -> bool {
        is_multi(&self.read())
    }

    /// The instance a call of `tool` goes to: `target`, else the most
    /// recently active instance serving it, skipping `exclude`.
    pub(crate) fn route(
        &self,
        tool: &str,
        target: Option<&str>,
        exclude: Option<&Arc<ProviderHandle>>,
        default_timeout: Duration,
    ) -> Result<Route, ToolFailure> {
        let members = self.read();
        let serving = members
            .iter()
            .filter(|m| m.tool(tool).is_some())
            .filter(|m| exclude.is_none_or(|e| !Arc::ptr_eq(e, &m.handle)));
        let chosen = match target {
            Some(target) => serving.into_iter().find(|m| m.instance_id() == target),
            None => serving.max_by_key(|m| m.handle.last_active()),
        };
        let Some(member) = chosen else {
            let available: Vec<&str> = members
                .iter()
                .filter(|m| m.tool(tool).is_some())
                .map(Member::instance_id)
                .collect();
            let message = match target {
                Some(target) => format!(
                    "no instance '{target}' of provider '{}' serves {tool}; available: {}",
                    self.name,
                    if available.is_empty() {
                        "none".to_owned()
                    } else {
                        available.join(", ")
                    }
                ),
                None => format!("no instance of provider '{}' serves {tool}", self.name),
            };
            return Err(ToolFailure::new(
                bridge_protocol::provider::tool_error_code::NOT_FOUND,
                message,
            ));
        };
        let timeout = member
            .tool(tool)
            .and_then(|t| t.timeout)
            .map_or(default_timeout, Duration::from_millis);
        Ok(Route {
            handle: member.handle.clone(),
            timeout,
            concurrency: member.concurrency,
        })
    }

    /// Is `handle` (this very registration) still a member?
    pub(crate) fn serves_through(&self, handle: &Arc<ProviderHandle>) -> bool {
        self.read().iter().any(|m| Arc::ptr_eq(&m.handle, handle))
    }

    /// What `list_{name}_instances` returns.
    pub(crate) fn describe(&self) -> Value {
        let members = self.read();
        let mut by_activity: Vec<&Member> = members.iter().collect();
        by_activity.sort_by_key(|m| std::cmp::Reverse(m.handle.last_active()));
        let instances: Vec<Value> = by_activity
            .iter()
            .enumerate()
            .map(|(rank, m)| {
                json!({
                    "id": m.instance_id(),
                    "metadata": m.metadata.clone().unwrap_or_default(),
                    "tools": m.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
                    "mostRecentlyActive": rank == 0,
                })
            })
            .collect();
        json!({"provider": self.name, "instances": instances})
    }
}

fn is_multi(members: &[Member]) -> bool {
    members.iter().any(|m| m.handle.instance.is_some())
}

impl InstanceGroups {
    /// Names of the providers with instances in `session_id`.
    pub(crate) fn provider_names(&self, session_id: &str) -> Vec<String> {
        lock(&self.groups)
            .keys()
            .filter(|(s, _)| s == session_id)
            .map(|(_, name)| name.clone())
            .collect()
    }

    /// Makes `tools` what `handle` serves in `session`, all or nothing.
    pub(crate) fn apply(
        &self,
        gw: &Arc<GatewayInner>,
        handle: &Arc<ProviderHandle>,
        session: &Arc<Session>,
        tools: &[ProviderTool],
    ) -> Result<(), ErrorMessage> {
        let (concurrency, metadata) = {
            let registration = lock(&handle.registration);
            (
                registration.hello.concurrency,
                registration.hello.metadata.clone(),
            )
        };
        let member = Member {
            handle: handle.clone(),
            tools: tools.to_vec(),
            concurrency,
            metadata,
        };
        let key = (session.id().to_owned(), handle.name.clone());
        let mut groups = lock(&self.groups);
        let group = groups
            .entry(key.clone())
            .or_insert_with(|| {
                Arc::new(InstanceGroup {
                    name: handle.name.clone(),
                    members: RwLock::new(Vec::new()),
                })
            })
            .clone();
        let previous = group.read().clone();
        let mut next = previous.clone();
        match next.iter_mut().find(|m| Arc::ptr_eq(&m.handle, handle)) {
            Some(existing) => *existing = member,
            None => next.push(member),
        }
        *group.write() = next.clone();
        let entries = entries(gw, &group, &next);
        let owner = ToolOwner::Provider(handle.name.clone());
        if let Err(conflict) = session.replace_tools(&owner, entries) {
            *group.write() = previous.clone();
            if previous.is_empty() {
                groups.remove(&key);
            }
            return Err(ErrorMessage::new(
                ErrorCode::ToolConflict,
                format!(
                    "Tool '{}' already registered by {}",
                    conflict.name, conflict.existing
                ),
            )
            .session_id(session.id()));
        }
        Ok(())
    }

    /// Removes `handle` (this very registration, not a newer one with the
    /// same identity) from its group in `session`.
    pub(crate) fn remove(
        &self,
        gw: &Arc<GatewayInner>,
        handle: &Arc<ProviderHandle>,
        session: &Arc<Session>,
    ) {
        let key = (session.id().to_owned(), handle.name.clone());
        let mut groups = lock(&self.groups);
        let Some(group) = groups.get(&key).cloned() else {
            return;
        };
        let next: Vec<Member> = group
            .read()
            .iter()
            .filter(|m| !Arc::ptr_eq(&m.handle, handle))
            .cloned()
            .collect();
        if next.len() == group.read().len() {
            return;
        }
        *group.write() = next.clone();
        let owner = ToolOwner::Provider(handle.name.clone());
        if next.is_empty() {
            groups.remove(&key);
        }
        // A subset of names the owner already held cannot conflict.
        if let Err(conflict) = session.replace_tools(&owner, entries(gw, &group, &next)) {
            tracing::error!(provider = %handle.name, %conflict, "removing an instance's tools conflicted");
        }
        drop(groups);
        gw.limiters.forget_idle(&handle.name);
    }
}

/// The session's entries for a group: one per tool name (the first
/// instance to declare a name defines its schema), plus the meta-tool.
fn entries(
    gw: &Arc<GatewayInner>,
    group: &Arc<InstanceGroup>,
    members: &[Member],
) -> Vec<ToolEntry> {
    let owner = ToolOwner::Provider(group.name.clone());
    let multi = is_multi(members);
    let mut tools: BTreeMap<&str, &ProviderTool> = BTreeMap::new();
    for member in members {
        for tool in &member.tools {
            tools.entry(tool.name.as_str()).or_insert(tool);
        }
    }
    let target_description = multi.then(|| target_description(members));
    let mut entries: Vec<ToolEntry> = tools
        .values()
        .map(|tool| {
            let mut schema = if tool.parameters.is_object() {
                tool.parameters.clone()
            } else {
                json!({"type": "object"})
            };
            if let Some(description) = &target_description {
                inject_target(&mut schema, description);
            }
            ToolEntry {
                spec: ToolSpec {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    input_schema: schema,
                    effect: tool
                        .access
                        .as_ref()
                        .map_or(ToolEffect::Execute, |access| access.effect()),
                },
                owner: owner.clone(),
                handler: Arc::new(GroupToolHandler::new(
                    gw,
                    group,
                    &tool.name,
                    tool.access.clone(),
                )),
            }
        })
        .collect();
    if multi && !entries.is_empty() {
        entries.push(ToolEntry {
            spec: ToolSpec {
                name: meta_tool_name(&group.name),
                description: format!(
                    "List the connected {} instances (ids and metadata). Pass an id as `target` to route a {} tool call to that instance.",
                    group.name, group.name
                ),
                input_schema: json!({"type": "object", "properties": {}}),
                effect: ToolEffect::Read,
            },
            owner,
            handler: Arc::new(ListInstances {
                group: Arc::downgrade(group),
            }),
        });
    }
    entries
}

pub(crate) fn meta_tool_name(provider: &str) -> String {
    format!("list_{provider}_instances")
}

fn target_description(members: &[Member]) -> String {
    let listed: Vec<String> = members
        .iter()
        .map(|m| {
            let text = |key: &str| {
                m.metadata
                    .as_ref()
                    .and_then(|meta| meta.get(key))
                    .and_then(Value::as_str)
                    .map(|s| bridge_policy::redact::preview(s, 120))
            };
            match (text("title"), text("url")) {
                (Some(title), Some(url)) => format!("{} ({title} — {url})", m.instance_id()),
                (Some(one), None) | (None, Some(one)) => format!("{} ({one})", m.instance_id()),
                (None, None) => m.instance_id().to_owned(),
            }
        })
        .collect();
    format!(
        "Instance ID to run on (default: the most recently active). Available: {}",
        listed.join(", ")
    )
}

/// Adds the optional `target` string property (the gateway's, replacing
/// any the provider declared: it is stripped before the call goes out).
fn inject_target(schema: &mut Value, description: &str) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let properties = object
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if !properties.is_object() {
        *properties = Value::Object(Map::new());
    }
    if let Some(properties) = properties.as_object_mut() {
        properties.insert(
            "target".to_owned(),
            json!({"type": "string", "description": description}),
        );
    }
}

/// `list_{name}_instances`.
struct ListInstances {
    group: Weak<InstanceGroup>,
}

#[async_trait]
impl ToolHandler for ListInstances {
    async fn call(&self, _invocation: ToolInvocation) -> Result<Value, ToolFailure> {
        match self.group.upgrade() {
            Some(group) => Ok(group.describe()),
            None => Ok(json!({"instances": []})),
        }
    }
}
