//! What agents did, for the dashboard's Activity page (docs/dashboard.md):
//! `activity.audit`, the audit log, and `activity.requests`, the facade's
//! request log (`requests.jsonl`), each newest first, filtered and paged
//! from the disk by `bridge_util::jsonl_pages`, never read whole, off the
//! async runtime. Answered only to the approver token: what agents ran and
//! asked is the person's to see. docs/rpc.md has the shapes.

use bridge_protocol::jsonrpc::{ErrorObject, INTERNAL_ERROR};
use bridge_util::jsonl_pages::{Page, PageError, Pager};
use serde_json::{Value, json};

use super::approvals::approver_only;
use super::params::invalid;
use super::{MethodTable, Params, RpcResult, SERVER_ERROR};
use crate::app::ServerContext;

pub fn register(table: &mut MethodTable) {
    table.insert("activity.audit", audit);
    table.insert("activity.requests", requests);
}

/// Entries a page holds when the caller does not say.
const DEFAULT_LIMIT: u64 = 50;
/// The most entries a page holds.
const MAX_LIMIT: u64 = 500;

/// `activity.audit {limit?, cursor?, tool?, decision?, session?, door?,
/// since?, until?, text?}` → `{entries, next, dir}`.
async fn audit(ctx: ServerContext, params: Params) -> RpcResult {
    approver_only(&params, "activity.audit")?;
    params.only(&[
        "limit", "cursor", "tool", "decision", "session", "door", "since", "until", "text",
    ])?;
    let paging = Paging::of(&params)?;
    let exact = |field: &str| -> Result<Option<String>, ErrorObject> {
        Ok(params.optional_str(field)?.map(str::to_owned))
    };
    let filter = AuditFilter {
        tool: exact("tool")?,
        decision: exact("decision")?,
        session: exact("session")?,
        door: exact("door")?,
        text: params.optional_str("text")?.map(str::to_lowercase),
        window: paging.window,
    };
    let dir = ctx.config.started().audit_log_dir.clone();
    let shown = dir.display().to_string();
    let page = off_the_runtime(move || {
        let files = bridge_policy::audit::log_files(&dir).map_err(|err| {
            ErrorObject::new(
                SERVER_ERROR,
                format!("cannot list the audit log {}: {err}", dir.display()),
            )
        })?;
        let window = filter.window;
        let newest_first = files
            .into_iter()
            .rev()
            .filter(|file| file.may_hold(window.since, window.until))
            .map(|file| file.path)
            .collect();
        paging.read(Pager::new(newest_first), "audit log", |entry, line| {
            filter.keeps(entry, line)
        })
    })
    .await?;
    Ok(json!({"entries": page.entries, "next": next_of(&page), "dir": shown}))
}

/// `activity.requests {limit?, cursor?, client?, model?, status?, path?,
/// since?, until?}` → `{entries, next, enabled, path, problem}`.
async fn requests(ctx: ServerContext, params: Params) -> RpcResult {
    approver_only(&params, "activity.requests")?;
    params.only(&[
        "limit", "cursor", "client", "model", "status", "path", "since", "until",
    ])?;
    let paging = Paging::of(&params)?;
    let filter = RequestFilter {
        client: params.optional_str("client")?.map(str::to_lowercase),
        model: params.optional_str("model")?.map(str::to_owned),
        status: Status::of(&params)?,
        path: params.optional_str("path")?.map(str::to_owned),
        window: paging.window,
    };
    let Some(journal) = ctx.request_journal.clone() else {
        // `request_log` is off (or its file was refused): nothing kept.
        return Ok(json!({
            "entries": [],
            "next": null,
            "enabled": false,
            "path": null,
            "problem": ctx.request_log_refused,
        }));
    };
    let shown = journal.path().display().to_string();
    // Newest first: the file written now, then the one it rotated to.
    let files = vec![journal.path().to_path_buf(), journal.rotated_path()];
    let page = off_the_runtime(move || {
        paging.read(Pager::new(files), "request log", |entry, _| {
            filter.keeps(entry)
        })
    })
    .await?;
    Ok(json!({
        "entries": page.entries,
        "next": next_of(&page),
        "enabled": true,
        "path": shown,
        "problem": journal.failure(),
    }))
}

/// Reads files on a thread of the blocking pool.
async fn off_the_runtime<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ErrorObject> + Send + 'static,
) -> Result<T, ErrorObject> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| ErrorObject::new(INTERNAL_ERROR, format!("cannot read the log: {err}")))?
}

fn next_of(page: &Page) -> Value {
    page.next
        .as_ref()
        .map_or(Value::Null, |next| Value::String(next.to_string()))
}

/// The params every page takes: how many, from where, and when.
struct Paging {
    limit: usize,
    cursor: Option<String>,
    window: Window,
}

impl Paging {
    fn of(params: &Params) -> Result<Self, ErrorObject> {
        let limit = params.optional_u64("limit")?.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 || limit > MAX_LIMIT {
            return Err(invalid("limit", &format!("must be 1 to {MAX_LIMIT}")));
        }
        Ok(Self {
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
            cursor: params.optional_str("cursor")?.map(str::to_owned),
            window: Window {
                since: instant(params, "since")?,
                until: instant(params, "until")?,
            },
        })
    }

    /// One page of `pager`'s files (`what`, for errors) from the cursor.
    fn read(
        self,
        pager: Pager,
        what: &str,
        keep: impl FnMut(&Value, &str) -> bool,
    ) -> Result<Page, ErrorObject> {
        let failed = |err: PageError| match err {
            PageError::Cursor(problem) => invalid(
                "cursor",
                &format!(
                    "is refused: {problem} (a cursor is the `next` of an earlier page with the same filters)"
                ),
            ),
            PageError::Io { .. } => {
                ErrorObject::new(SERVER_ERROR, format!("cannot read the {what}: {err}"))
            }
        };
        let cursor = self
            .cursor
            .as_deref()
            .map(|text| pager.cursor(text))
            .transpose()
            .map_err(failed)?;
        pager
            .page(cursor.as_ref(), self.limit, keep)
            .map_err(failed)
    }
}

/// An RFC 3339 param as Unix milliseconds.
fn instant(params: &Params, field: &str) -> Result<Option<i64>, ErrorObject> {
    params
        .optional_str(field)?
        .map(|text| {
            bridge_util::time::unix_millis(text).ok_or_else(|| {
                invalid(
                    field,
                    "must be an RFC 3339 timestamp (2026-01-01T10:00:00Z)",
                )
            })
        })
        .transpose()
}

/// `since <= at < until`, in Unix milliseconds.
#[derive(Debug, Clone, Copy)]
struct Window {
    since: Option<i64>,
    until: Option<i64>,
}

impl Window {
    /// Whether a timestamp is inside; one that does not parse is not,
    /// unless the window is open at both ends.
    fn holds(&self, at: &Value) -> bool {
        if self.since.is_none() && self.until.is_none() {
            return true;
        }
        let Some(at) = at.as_str().and_then(bridge_util::time::unix_millis) else {
            return false;
        };
        self.since.is_none_or(|since| since <= at) && self.until.is_none_or(|until| at < until)
    }
}

struct AuditFilter {
    tool: Option<String>,
    decision: Option<String>,
    session: Option<String>,
    /// The entry's `hook` (`toolCall:mcp`, `preToolUse:claude`, …).
    door: Option<String>,
    /// Lowercased.
    text: Option<String>,
    window: Window,
}

impl AuditFilter {
    fn keeps(&self, entry: &Value, line: &str) -> bool {
        let is = |field: &str, wanted: &Option<String>| {
            wanted
                .as_deref()
                .is_none_or(|wanted| entry[field].as_str() == Some(wanted))
        };
        is("tool", &self.tool)
            && is("decision", &self.decision)
            && is("sessionId", &self.session)
            && is("hook", &self.door)
            && self.window.holds(&entry["timestamp"])
            && self
                .text
                .as_deref()
                .is_none_or(|text| line.to_lowercase().contains(text))
    }
}

struct RequestFilter {
    /// Lowercased: a part of the client's user agent.
    client: Option<String>,
    model: Option<String>,
    status: Option<Status>,
    path: Option<String>,
    window: Window,
}

impl RequestFilter {
    fn keeps(&self, entry: &Value) -> bool {
        let text = |field: &str| entry[field].as_str();
        self.client.as_deref().is_none_or(|client| {
            text("client").is_some_and(|own| own.to_lowercase().contains(client))
        }) && self.model.as_deref().is_none_or(|model| {
            text("model") == Some(model) || text("requestedModel") == Some(model)
        }) && self
            .path
            .as_deref()
            .is_none_or(|path| text("path") == Some(path))
            && self.status.is_none_or(|status| {
                entry["status"]
                    .as_u64()
                    .is_some_and(|code| status.holds(code))
            })
            && self.window.holds(&entry["at"])
    }
}

/// An HTTP status, or a class of them (`4xx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Exact(u64),
    Class(u64),
}

impl Status {
    fn of(params: &Params) -> Result<Option<Self>, ErrorObject> {
        let refused = || invalid("status", "must be a status code (404) or a class (4xx)");
        let Some(value) = params.optional_value("status")? else {
            return Ok(None);
        };
        let status = match value {
            Value::Number(number) => number.as_u64().map(Self::Exact),
            Value::String(text) => Self::parse(text),
            _ => None,
        };
        status
            .filter(|status| match status {
                Self::Exact(code) => (100..=599).contains(code),
                Self::Class(class) => (1..=5).contains(class),
            })
            .map(Some)
            .ok_or_else(refused)
    }

    fn parse(text: &str) -> Option<Self> {
        let lower = text.to_ascii_lowercase();
        if let Some(class) = lower.strip_suffix("xx") {
            return (class.len() == 1)
                .then(|| class.parse().ok().map(Self::Class))
                .flatten();
        }
        (lower.len() == 3 && lower.bytes().all(|b| b.is_ascii_digit()))
            .then(|| lower.parse().ok().map(Self::Exact))
            .flatten()
    }

    fn holds(self, code: u64) -> bool {
        match self {
            Self::Exact(exact) => code == exact,
            Self::Class(class) => code / 100 == class,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_codes_or_classes() {
        assert_eq!(Status::parse("404"), Some(Status::Exact(404)));
        assert_eq!(Status::parse("4xx"), Some(Status::Class(4)));
        assert_eq!(Status::parse("5XX"), Some(Status::Class(5)));
        for bad in ["", "4", "40x", "xx", "+4xx", "4044", "abc"] {
            assert_eq!(Status::parse(bad), None, "{bad}");
        }
        assert!(Status::Class(4).holds(404) && !Status::Class(4).holds(500));
        assert!(Status::Exact(200).holds(200) && !Status::Exact(200).holds(201));
    }

    #[test]
    fn a_window_holds_what_is_between_its_ends() {
        let at = |text: &str| bridge_util::time::unix_millis(text);
        let window = Window {
            since: at("2026-01-01T10:00:00Z"),
            until: at("2026-01-01T11:00:00Z"),
        };
        assert!(window.holds(&json!("2026-01-01T10:00:00.000Z")));
        assert!(window.holds(&json!("2026-01-01T11:30:00+01:00")));
        assert!(!window.holds(&json!("2026-01-01T11:00:00Z")));
        assert!(!window.holds(&json!("not a time")));
        assert!(!window.holds(&Value::Null));
        let open = Window {
            since: None,
            until: None,
        };
        assert!(open.holds(&Value::Null));
    }
}
